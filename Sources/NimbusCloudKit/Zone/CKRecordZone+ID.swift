import Foundation
import NimbusProtocol

/// The owner name that stands for the current user in zone IDs
/// (`CKRecordZone.ID(zoneName:ownerName:)`'s default).
public let CKCurrentUserDefaultName = "__defaultOwner__"

extension CKRecordZone {
    /// Identifies a zone (CloudKit's `CKRecordZone.ID`).
    public typealias ID = CKRecordZoneID
}

/// Identifies a zone: its name and its owner (``CKCurrentUserDefaultName`` for the current
/// user's zones). Equal IDs name the same zone; secure-codable. Write it `CKRecordZone.ID`,
/// as in CloudKit; the top-level name (CloudKit's Objective-C one) lets `NSKeyedArchiver`
/// archive it off Apple platforms, where it archives top-level classes only.
public final class CKRecordZoneID: NSObject, NSSecureCoding, NSCopying, Sendable {
    /// The name of the default zone (`_defaultZone`).
    public static let defaultZoneName = ZoneID.defaultZoneName
    /// The default zone of the current user.
    public static let `default` = CKRecordZoneID()

    public let zoneName: String
    public let ownerName: String

    public init(zoneName: String = CKRecordZoneID.defaultZoneName, ownerName: String = CKCurrentUserDefaultName) {
        self.zoneName = zoneName
        self.ownerName = ownerName
    }

    /// The ID of an SDK zone (no owner: the current user).
    init(_ zoneID: ZoneID) {
        self.zoneName = zoneID.zoneName
        self.ownerName = zoneID.ownerRecordName ?? CKCurrentUserDefaultName
    }

    /// The SDK's zone ID.
    var nimbus: ZoneID {
        ZoneID(zoneName: zoneName, ownerRecordName: ownerName == CKCurrentUserDefaultName ? nil : ownerName)
    }

    public static var supportsSecureCoding: Bool { true }

    public func encode(with coder: NSCoder) {
        coder.encode(zoneName as NSString, forKey: "ZoneName")
        coder.encode(ownerName as NSString, forKey: "OwnerName")
    }

    public required init?(coder: NSCoder) {
        guard let name = coder.decodeObject(of: NSString.self, forKey: "ZoneName"),
            let owner = coder.decodeObject(of: NSString.self, forKey: "OwnerName")
        else { return nil }
        self.zoneName = name as String
        self.ownerName = owner as String
    }

    public func copy(with zone: NSZone? = nil) -> Any { self }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CKRecordZoneID else { return false }
        return zoneName == other.zoneName && ownerName == other.ownerName
    }

    public override var hash: Int { zoneName.hashValue ^ ownerName.hashValue &* 31 }

    public override var description: String { "<CKRecordZoneID: \(zoneName):\(ownerName)>" }
}
