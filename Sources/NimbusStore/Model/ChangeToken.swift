import Foundation
import NimbusProtocol

/// The opaque sync tokens the store hands out. A token is a position in a database's
/// change log (a version allocated inside a commit), made opaque with base64url.
///
/// - Record tokens (`records/changes`, `changes/zone`) name the zone incarnation and version.
/// - Database tokens (`changes/database`) and meta tokens (`zones/changes`) name a version.
public enum ChangeToken {
    /// The token for a zone's record feed.
    public static func records(incarnation: Int64, version: Int64) -> String {
        encode("r1:\(incarnation):\(version)")
    }

    /// The token for a database's zone feed (`changes/database`).
    public static func database(version: Int64) -> String { encode("d1:\(version)") }

    /// The token for `zones/changes`.
    public static func meta(version: Int64) -> String { encode("m1:\(version)") }

    /// Decodes a record token into (incarnation, version).
    public static func decodeRecords(_ token: String) throws(CloudKitError) -> (incarnation: Int64, version: Int64) {
        let parts = try decode(token, prefix: "r1", count: 3)
        return (parts[0], parts[1])
    }

    /// Decodes a database token into its version.
    public static func decodeDatabase(_ token: String) throws(CloudKitError) -> Int64 {
        try decode(token, prefix: "d1", count: 2)[0]
    }

    /// Decodes a meta token into its version. Database tokens are accepted too.
    public static func decodeMeta(_ token: String) throws(CloudKitError) -> Int64 {
        if let parts = try? decode(token, prefix: "d1", count: 2) { return parts[0] }
        return try decode(token, prefix: "m1", count: 2)[0]
    }

    /// Text made opaque: base64url without padding.
    static func encode(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The text of an ``encode(_:)``d token, or `nil`.
    static func decodeText(_ token: String) -> String? {
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64.append("=") }
        return Data(base64Encoded: base64).flatMap { String(data: $0, encoding: .utf8) }
    }

    private static func decode(_ token: String, prefix: String, count: Int) throws(CloudKitError) -> [Int64] {
        guard let text = decodeText(token) else {
            throw .badRequest("the sync token '\(token)' is not a token this server issued")
        }
        let parts = text.split(separator: ":")
        guard parts.count == count, parts[0] == prefix else {
            throw .badRequest("the sync token '\(token)' is not a token of this kind (\(prefix))")
        }
        var numbers: [Int64] = []
        for part in parts.dropFirst() {
            guard let number = Int64(part), number >= 0 else {
                throw .badRequest("the sync token '\(token)' is not a token this server issued")
            }
            numbers.append(number)
        }
        return numbers
    }
}
