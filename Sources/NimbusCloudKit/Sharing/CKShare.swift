import Foundation
import Nimbus
import NimbusProtocol

/// The name of the record of a zone-wide share (`CKShare(recordZoneID:)`).
public let CKRecordNameZoneWideShare = Share.zoneWideShareRecordName

/// A share: the record that gives other users access to a record hierarchy or a whole zone.
/// Save it with its root record in one modify (a zone-wide share alone).
///
/// ```swift
/// let share = CKShare(rootRecord: album)
/// share[CKShare.SystemFieldKey.title] = "Summer"
/// share.addParticipant(try await container.shareParticipant(forEmailAddress: "bob@example.com"))
/// _ = try await database.modifyRecords(saving: [album, share], deleting: [])
/// ```
///
/// `@unchecked Sendable`: see ``CKRecord``; a share adds no stored property.
open class CKShare: CKRecord, @unchecked Sendable {
    /// Keys of the share's own fields.
    public enum SystemFieldKey {
        public static let title: CKRecord.FieldKey = Share.titleKey
        public static let thumbnailImageData: CKRecord.FieldKey = "cloudkit.thumbnailImageData"
        public static let shareType: CKRecord.FieldKey = "cloudkit.type"
    }

    /// A share of the hierarchy rooted at `rootRecord` (a record of a custom zone); the root's
    /// ``CKRecord/share`` now names this share.
    public convenience init(rootRecord: CKRecord) {
        self.init(rootRecord: rootRecord, shareID: CKRecord.ID(zoneID: rootRecord.recordID.zoneID))
    }

    public init(rootRecord: CKRecord, shareID: CKRecord.ID) {
        let share = Share(rootRecord: rootRecord.nimbus, shareID: shareID.nimbus)
        rootRecord.state.withLock { $0.share = NimbusProtocol.Reference(recordName: shareID.recordName, action: .none) }
        super.init(record: share.record)
    }

    /// A share of every record of a custom zone.
    public init(recordZoneID: CKRecordZone.ID) {
        super.init(record: Share(zoneID: recordZoneID.nimbus).record)
    }

    /// The share of an SDK share record.
    override init(record: Record) {
        super.init(record: record)
    }

    public required init?(coder: NSCoder) {
        super.init(coder: coder)
    }

    /// Reads and changes the SDK's view of this share under the record's lock.
    private func withShare<T>(_ body: (inout Share) -> T) -> T {
        state.withLock { record in
            var share = Share(record) ?? Share(zoneID: record.id.zoneID)
            let result = body(&share)
            record = share.record
            return result
        }
    }

    /// What anyone with the URL may do (`.none`: only invited participants may join).
    public var publicPermission: ParticipantPermission {
        get { ParticipantPermission(withShare { $0.publicPermission }) }
        set { withShare { $0.publicPermission = newValue.nimbus } }
    }

    /// The owner and the participants.
    public var participants: [Participant] { withShare { $0.participants }.map(Participant.init) }

    /// The share's owner (an empty participant for a share never saved).
    public var owner: Participant {
        Participant(withShare { $0.owner } ?? Share.Participant(userRecordName: CKCurrentUserDefaultName, permission: .readWrite))
    }

    /// How the signed-in user takes part, when the share came from the server.
    public var currentUserParticipant: Participant? { withShare { $0.currentUserParticipant }.map(Participant.init) }

    /// The URL others open to join; set once the share is saved.
    public var url: URL? { withShare { $0.url } }

    /// Adds (or updates) a participant.
    public func addParticipant(_ participant: Participant) {
        withShare { $0.addParticipant(participant.nimbus) }
    }

    /// Removes a participant.
    public func removeParticipant(_ participant: Participant) {
        withShare { $0.removeParticipant(participant.nimbus) }
    }
}

extension CKRecord {
    /// The CloudKit record for an SDK record: a ``CKShare`` for a share record.
    static func make(_ record: Record) -> CKRecord {
        record.recordType == Share.recordType ? CKShare(record: record) : CKRecord(record: record)
    }
}
