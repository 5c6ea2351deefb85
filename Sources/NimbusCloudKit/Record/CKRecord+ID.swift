import Foundation
import Nimbus
import NimbusProtocol

extension CKRecord {
    /// Identifies a record (CloudKit's `CKRecord.ID`).
    public typealias ID = CKRecordID
}

/// Identifies a record: its name within a zone. Equal IDs name the same record;
/// secure-codable, so apps persist them. Write it `CKRecord.ID`, as in CloudKit; the
/// top-level name (CloudKit's Objective-C one) lets `NSKeyedArchiver` archive it off Apple
/// platforms, where it archives top-level classes only.
public final class CKRecordID: NSObject, NSSecureCoding, NSCopying, Sendable {
    public let recordName: String
    public let zoneID: CKRecordZone.ID

    /// - Parameters:
    ///   - recordName: defaults to a new UUID string.
    ///   - zoneID: defaults to the current user's default zone.
    public init(recordName: String = UUID().uuidString, zoneID: CKRecordZone.ID = .default) {
        self.recordName = recordName
        self.zoneID = zoneID
    }

    /// The ID of an SDK record.
    init(_ id: Record.ID) {
        self.recordName = id.recordName
        self.zoneID = CKRecordZone.ID(id.zoneID)
    }

    /// The SDK's record ID.
    var nimbus: Record.ID { Record.ID(recordName: recordName, zoneID: zoneID.nimbus) }

    public static var supportsSecureCoding: Bool { true }

    public func encode(with coder: NSCoder) {
        coder.encode(recordName as NSString, forKey: "RecordName")
        coder.encode(zoneID, forKey: "ZoneID")
    }

    public required init?(coder: NSCoder) {
        guard let name = coder.decodeObject(of: NSString.self, forKey: "RecordName"),
            let zone = coder.decodeObject(of: CKRecordZone.ID.self, forKey: "ZoneID")
        else { return nil }
        self.recordName = name as String
        self.zoneID = zone
    }

    public func copy(with zone: NSZone? = nil) -> Any { self }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CKRecordID else { return false }
        return recordName == other.recordName && zoneID == other.zoneID
    }

    public override var hash: Int { recordName.hashValue ^ zoneID.hash &* 17 }

    public override var description: String {
        "<CKRecordID: \(recordName); zoneID=\(zoneID.zoneName):\(zoneID.ownerName)>"
    }
}
