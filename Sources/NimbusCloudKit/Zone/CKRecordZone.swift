import Foundation
import Nimbus
import NimbusProtocol

/// A record zone: a named group of records with its own change feed and, in the private
/// database, atomic commits.
///
/// ```swift
/// let zone = CKRecordZone(zoneName: "Notes")
/// try await database.save(zone)
/// ```
public final class CKRecordZone: NSObject, NSSecureCoding, NSCopying, Sendable {
    /// What a zone supports (CloudKit's `CKRecordZone.Capabilities`).
    public struct Capabilities: OptionSet, Sendable, Hashable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// The zone has a change feed (`fetchChanges`).
        public static let fetchChanges = Capabilities(rawValue: 1 << 0)
        /// Modifications in the zone can be atomic.
        public static let atomic = Capabilities(rawValue: 1 << 1)
        /// Records of the zone can be shared.
        public static let sharing = Capabilities(rawValue: 1 << 2)
        /// The whole zone can be shared (`CKShare(recordZoneID:)`).
        public static let zoneWideSharing = Capabilities(rawValue: 1 << 3)
    }

    public let zoneID: ID
    /// What the zone supports; custom zones support all four, the default zone none.
    public let capabilities: Capabilities
    /// The zone's share (`CKShare(recordZoneID:)`, named ``CKRecordNameZoneWideShare``) when the
    /// zone is shared whole: set on zones the server lists (``CKDatabase/allRecordZones()``,
    /// ``CKDatabase/recordZone(for:)``), `nil` otherwise.
    public let share: CKRecord.Reference?

    /// A zone of the current user.
    public convenience init(zoneName: String) {
        self.init(zoneID: ID(zoneName: zoneName))
    }

    public convenience init(zoneID: ID) {
        self.init(zoneID: zoneID, share: nil)
    }

    init(zoneID: ID, share: CKRecord.Reference?) {
        self.zoneID = zoneID
        self.capabilities = zoneID.zoneName == ID.defaultZoneName ? [] : [.fetchChanges, .atomic, .sharing, .zoneWideSharing]
        self.share = share
    }

    /// The default zone of the current user.
    public static func `default`() -> CKRecordZone { CKRecordZone(zoneID: .default) }

    public static var supportsSecureCoding: Bool { true }

    public func encode(with coder: NSCoder) {
        coder.encode(zoneID, forKey: "ZoneID")
        if let share { coder.encode(share, forKey: "Share") }
    }

    public required convenience init?(coder: NSCoder) {
        guard let id = coder.decodeObject(of: ID.self, forKey: "ZoneID") else { return nil }
        self.init(zoneID: id, share: coder.decodeObject(of: CKRecord.Reference.self, forKey: "Share"))
    }

    public func copy(with zone: NSZone? = nil) -> Any { self }

    public override func isEqual(_ object: Any?) -> Bool {
        (object as? CKRecordZone)?.zoneID == zoneID
    }

    public override var hash: Int { zoneID.hash }

    public override var description: String { "<CKRecordZone: \(zoneID.zoneName)>" }
}
