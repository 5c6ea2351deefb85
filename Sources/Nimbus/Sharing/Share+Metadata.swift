import Foundation
import NimbusProtocol

extension Share {
    /// What a prospective participant may see of a share before accepting it: its title and
    /// permissions, its owner, its root record's ID and their own status. The SDK's
    /// counterpart of `CKShare.Metadata`, read with
    /// ``Container/shareMetadata(for:shouldFetchRootRecord:)`` and accepted with
    /// ``Container/accept(_:)``.
    ///
    /// ```swift
    /// let metadata = try await container.shareMetadata(for: url)
    /// print("\(metadata.share.title ?? "A share") from \(metadata.ownerIdentity.nameComponents?.givenName ?? "someone")")
    /// if metadata.participantStatus != .accepted {
    ///     try await container.accept(metadata)
    /// }
    /// ```
    public struct Metadata: Sendable, Hashable {
        /// The share's short GUID (the last path component of its URL).
        public var shortGUID: String
        /// The container the share belongs to.
        public var containerIdentifier: String
        /// The container environment, when the server said.
        public var environment: Container.Environment?
        /// The shared zone, named with its owner: the zone ID to use in the
        /// ``Container/sharedCloudDatabase``.
        public var zoneID: ZoneID
        /// The share as the caller may see it.
        public var share: Share
        /// The root record of a hierarchy share; `nil` for a zone-wide share.
        public var rootRecordID: Record.ID?
        /// The root record, when asked for (`shouldFetchRootRecord`) and the caller may read it.
        public var rootRecord: Record?
        /// The owner of the shared records.
        public var ownerIdentity: UserIdentity
        /// How the caller takes part (``Participant/Role/publicUser`` for someone who is
        /// not invited but may join through the URL).
        public var participantRole: Participant.Role
        /// Whether the caller has accepted.
        public var participantStatus: Participant.AcceptanceStatus
        /// What the caller may do once accepted.
        public var participantPermission: Participant.Permission
    }
}

extension Share.Metadata {
    /// Decodes one entry of a `records/resolve` or `records/accept` answer; throws the
    /// entry's error when it is one.
    init(wire json: JSON) throws(NimbusError) {
        if let error = NimbusError(wire: json) { throw error }
        guard let shortGUID = json["shortGUID"]?.string else {
            throw NimbusError.malformedResponse("a share metadata has no shortGUID")
        }
        guard let zoneJSON = json["zoneID"], let zoneID = try? ZoneID(wire: WireReader(zoneJSON)) else {
            throw NimbusError.malformedResponse("the share metadata of \(shortGUID) has no zoneID")
        }
        guard let shareJSON = json["share"], let share = Share(try Database.record(from: shareJSON, zoneID: zoneID))
        else {
            throw NimbusError.malformedResponse("the share metadata of \(shortGUID) has no share record")
        }
        self.shortGUID = shortGUID
        self.containerIdentifier = json["containerIdentifier"]?.string ?? ""
        self.environment = json["environment"]?.string.flatMap(Container.Environment.init(rawValue:))
        self.zoneID = zoneID
        self.share = share
        self.rootRecordID = json["rootRecordName"]?.string.map { Record.ID(recordName: $0, zoneID: zoneID) }
        if let rootJSON = json["rootRecord"], rootJSON != .null {
            self.rootRecord = try Database.record(from: rootJSON, zoneID: zoneID)
        } else {
            self.rootRecord = nil
        }
        self.ownerIdentity =
            json["ownerIdentity"].map(UserIdentity.init(shareWire:))
            ?? UserIdentity(userRecordID: nil, lookupInfo: nil, nameComponents: nil)
        self.participantRole = json["participantType"]?.string.map { Share.Participant.Role(rawValue: $0) ?? .unknown }
            ?? .unknown
        self.participantStatus =
            json["participantStatus"]?.string.map { Share.Participant.AcceptanceStatus(rawValue: $0) ?? .unknown }
            ?? .unknown
        self.participantPermission =
            json["participantPermission"]?.string.flatMap(Share.Participant.Permission.init(rawValue:))
            ?? Share.Participant.Permission.none
    }
}
