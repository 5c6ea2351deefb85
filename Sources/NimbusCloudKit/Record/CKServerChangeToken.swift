import Foundation
import Nimbus
import NimbusProtocol

/// An opaque position in a change feed (a zone's records, a database's zones). Persist it
/// with `NSKeyedArchiver` (it is secure-codable) and pass it back to fetch only what changed.
///
/// ```swift
/// let data = try NSKeyedArchiver.archivedData(withRootObject: token, requiringSecureCoding: true)
/// let restored = try NSKeyedUnarchiver.unarchivedObject(ofClass: CKServerChangeToken.self, from: data)
/// ```
public final class CKServerChangeToken: NSObject, NSSecureCoding, NSCopying, Sendable {
    let token: ServerChangeToken

    init(_ token: ServerChangeToken) {
        self.token = token
    }

    public static var supportsSecureCoding: Bool { true }

    public func encode(with coder: NSCoder) {
        coder.encode(token.rawValue as NSString, forKey: "NimbusToken")
    }

    public required init?(coder: NSCoder) {
        guard let raw = coder.decodeObject(of: NSString.self, forKey: "NimbusToken") else { return nil }
        self.token = ServerChangeToken(rawValue: raw as String)
    }

    public func copy(with zone: NSZone? = nil) -> Any { self }

    public override func isEqual(_ object: Any?) -> Bool {
        (object as? CKServerChangeToken)?.token == token
    }

    public override var hash: Int { token.hashValue }

    public override var description: String { "<CKServerChangeToken: \(token.rawValue)>" }
}
