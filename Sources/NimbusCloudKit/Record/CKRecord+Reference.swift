import Foundation
import Nimbus
import NimbusProtocol

extension CKRecord {
    /// What the server does to a record that holds a reference when the target is deleted.
    public enum ReferenceAction: UInt, Sendable, Hashable {
        /// Nothing: a plain link.
        case none = 0
        /// Deleting the target deletes the record that holds the reference.
        case deleteSelf = 1
    }

    /// A link from one record to another (CloudKit's `CKRecord.Reference`).
    public typealias Reference = CKReference
}

/// A link from one record to another in the same zone: a field value, or a record's
/// ``CKRecord/parent``. Write it `CKRecord.Reference`, as in CloudKit; the top-level name
/// (CloudKit's Objective-C one) lets `NSKeyedArchiver` archive it off Apple platforms.
public final class CKReference: NSObject, NSSecureCoding, NSCopying, Sendable {
    public let recordID: CKRecord.ID
    public let action: CKRecord.ReferenceAction

    public init(recordID: CKRecord.ID, action: CKRecord.ReferenceAction) {
        self.recordID = recordID
        self.action = action
    }

    public convenience init(record: CKRecord, action: CKRecord.ReferenceAction) {
        self.init(recordID: record.recordID, action: action)
    }

    /// The CloudKit reference for an SDK reference held by the record `holder` (a
    /// reference without a zone points into the holder's zone).
    convenience init(_ reference: NimbusProtocol.Reference, heldBy holder: Record.ID) {
        self.init(
            recordID: CKRecord.ID(reference.recordID(relativeTo: holder)),
            action: reference.action == .deleteSelf ? .deleteSelf : .none)
    }

    /// The SDK's reference.
    var nimbus: NimbusProtocol.Reference {
        NimbusProtocol.Reference(recordID: recordID.nimbus, action: action == .deleteSelf ? .deleteSelf : .none)
    }

    public static var supportsSecureCoding: Bool { true }

    public func encode(with coder: NSCoder) {
        coder.encode(recordID, forKey: "RecordID")
        coder.encode(Int(action.rawValue), forKey: "Action")
    }

    public required init?(coder: NSCoder) {
        guard let id = coder.decodeObject(of: CKRecord.ID.self, forKey: "RecordID") else { return nil }
        self.recordID = id
        self.action = CKRecord.ReferenceAction(rawValue: UInt(max(0, coder.decodeInteger(forKey: "Action")))) ?? .none
    }

    public func copy(with zone: NSZone? = nil) -> Any { self }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CKReference else { return false }
        return recordID == other.recordID && action == other.action
    }

    public override var hash: Int { recordID.hash }

    public override var description: String { "<CKReference: \(recordID.recordName), action: \(action)>" }
}
