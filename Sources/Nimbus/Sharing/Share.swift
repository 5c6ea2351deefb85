import Foundation
import NimbusProtocol

/// A share: a record of type `cloudkit.share` that opens a zone, or a record hierarchy, of
/// the owner's private database to other users. The SDK's counterpart of `CKShare`.
///
/// Share a hierarchy by saving the share together with its root record (one atomic
/// `records/modify`); every record whose ``Record/parent`` chain reaches the root is shared
/// with it:
///
/// ```swift
/// var share = Share(rootRecord: album)
/// share.title = "Summer"
/// share.addParticipant(.init(userRecordName: ann, permission: .readWrite))
/// share.addParticipant(.init(emailAddress: "bob@example.com", permission: .readOnly))
/// let (saved, _) = try await container.privateCloudDatabase.save(share, rootRecord: album)
/// print(saved.url!)       // send this to Ann and Bob
/// ```
///
/// Share a whole custom zone with ``init(zoneID:)``; its record name is
/// ``zoneWideShareRecordName``:
///
/// ```swift
/// var share = Share(zoneID: albumZone)
/// share.publicPermission = .readOnly        // anyone with the URL may join, read-only
/// let saved = try await container.privateCloudDatabase.save(share)
/// ```
///
/// A participant reads the share in their ``Container/sharedCloudDatabase`` after
/// ``Container/accept(_:)``; deleting the share there leaves it (``Container/leave(_:)``).
public struct Share: Sendable, Hashable, Identifiable {
    /// The record type of every share.
    public static let recordType = "cloudkit.share"
    /// The record name of a zone-wide share (CloudKit's `CKRecordNameZoneWideShare`).
    public static let zoneWideShareRecordName = "cloudkit.zoneshare"
    /// The field that holds a share's title (CloudKit's `CKShare.SystemFieldKey.title`).
    public static let titleKey = "cloudkit.title"

    /// The share as a record: its identity, change tag and fields (``title``).
    public internal(set) var record: Record
    /// The root record a hierarchy share was made for (with ``init(rootRecord:shareID:)``);
    /// `nil` for a zone-wide share and for a share read from the server.
    public let rootRecordID: Record.ID?

    /// A new share of a record hierarchy rooted at `rootRecord`. Save it with the root:
    /// ``Database/save(_:rootRecord:)``.
    /// - Parameters:
    ///   - rootRecord: the record whose hierarchy is shared; it must be in a custom zone.
    ///   - shareID: the share's record ID; a new name in the root's zone by default.
    public init(rootRecord: Record, shareID: Record.ID? = nil) {
        var record = Record(
            recordType: Self.recordType, recordID: shareID ?? Record.ID(zoneID: rootRecord.id.zoneID))
        record.shareState = State()
        self.record = record
        self.rootRecordID = rootRecord.id
    }

    /// A new share of a whole custom zone (at most one per zone): every record of the zone
    /// is shared. Save it with ``Database/save(_:)``.
    public init(zoneID: ZoneID) {
        var record = Record(
            recordType: Self.recordType, recordID: Record.ID(recordName: Self.zoneWideShareRecordName, zoneID: zoneID))
        record.shareState = State()
        self.record = record
        self.rootRecordID = nil
    }

    /// The share a record fetched from the server is; `nil` when it is not a share.
    ///
    /// ```swift
    /// let record = try await database.record(for: shareID)
    /// guard let share = Share(record) else { return }
    /// ```
    public init?(_ record: Record) {
        guard record.recordType == Self.recordType else { return nil }
        var record = record
        if record.shareState == nil { record.shareState = State() }
        self.record = record
        self.rootRecordID = nil
    }

    /// The share record's ID.
    public var id: Record.ID { record.id }

    /// Whether this share covers its whole zone rather than a record hierarchy.
    public var isZoneWide: Bool { record.id.recordName == Self.zoneWideShareRecordName }

    /// The title people see before they accept (the `cloudkit.title` field).
    public var title: String? {
        get { record[Self.titleKey] }
        set { record[Self.titleKey] = newValue }
    }

    /// Who may join with the share's URL alone, and with what permission: ``Participant/Permission/none``
    /// (the default) means only invited participants may accept.
    ///
    /// Changing it removes the pending participants (CloudKit's rule); changing it to
    /// `none` removes those who joined through the URL.
    public var publicPermission: Participant.Permission {
        get { state.publicPermission }
        set { state.publicPermission = newValue }
    }

    /// Every participant, the owner first once the server has saved the share.
    public var participants: [Participant] { state.participants }

    /// The owner, once the server has saved the share.
    public var owner: Participant? { state.owner }

    /// The signed-in user as a participant of this share (the owner, for the owner).
    public var currentUserParticipant: Participant? { state.currentUserParticipant }

    /// The share's unguessable short GUID (22 URL-safe characters), made by the server.
    public var shortGUID: String? { state.shortGUID }

    /// The share's URL (`{server}/share/{container}/{environment}/{shortGUID}`; the short
    /// GUID is its last path component): what the owner sends to people, and
    /// what ``Container/shareMetadata(for:shouldFetchRootRecord:)`` reads.
    public var url: URL? { state.url }

    /// Invites a participant (or, when one with the same identity is already listed,
    /// changes their permission). The owner cannot be added.
    ///
    /// ```swift
    /// share.addParticipant(.init(emailAddress: "ann@example.com", permission: .readWrite))
    /// ```
    public mutating func addParticipant(_ participant: Participant) {
        guard participant.role != .owner else { return }
        if let index = state.participants.firstIndex(where: { $0.isSamePerson(as: participant) }) {
            state.participants[index].permission = participant.permission
        } else {
            state.participants.append(participant)
        }
    }

    /// Removes a participant (by ``Participant/participantID`` when both have one, otherwise
    /// by user record name or email). Their access ends when the share is saved.
    public mutating func removeParticipant(_ participant: Participant) {
        state.participants.removeAll { $0.role != .owner && $0.isSamePerson(as: participant) }
    }

    /// Changes a listed participant's permission; saves it with the share.
    ///
    /// ```swift
    /// share.setPermission(.readOnly, for: ann)
    /// try await database.save(share)
    /// ```
    public mutating func setPermission(_ permission: Participant.Permission, for participant: Participant) {
        guard let index = state.participants.firstIndex(where: { $0.isSamePerson(as: participant) }) else { return }
        state.participants[index].permission = permission
    }

    var state: State {
        get { record.shareState ?? State() }
        set { record.shareState = newValue }
    }
}

extension Share {
    /// The members a share record has beyond a record's (CloudKit JS's names).
    struct State: Sendable, Hashable {
        var publicPermission: Participant.Permission = .none
        var participants: [Participant] = []
        var owner: Participant?
        var currentUserParticipant: Participant?
        var shortGUID: String?
        var url: URL?
    }
}
