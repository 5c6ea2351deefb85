import Foundation
import Nimbus
import NimbusProtocol

extension CKShare {
    /// What a share URL resolves to: the share, its root, and how the caller takes part.
    /// Accept it with ``CKContainer/accept(_:)``.
    public final class Metadata: NSObject, NSCopying, Sendable {
        let metadata: Share.Metadata

        init(_ metadata: Share.Metadata) {
            self.metadata = metadata
        }

        public var containerIdentifier: String { metadata.containerIdentifier }
        public var share: CKShare { CKShare(record: metadata.share.record) }
        /// The root of a hierarchy share; `nil` for a zone-wide share.
        public var hierarchicalRootRecordID: CKRecord.ID? { metadata.rootRecordID.map(CKRecord.ID.init) }
        /// The root of a hierarchy share; `nil` for a zone-wide share (CloudKit declared it
        /// before zone-wide shares, implicitly unwrapped; deprecated since iOS 16 and macOS 13).
        @available(*, deprecated, renamed: "hierarchicalRootRecordID")
        public var rootRecordID: CKRecord.ID! { hierarchicalRootRecordID }
        /// The root record, when it was asked for (`shouldFetchRootRecord`).
        public var rootRecord: CKRecord? { metadata.rootRecord.map(CKRecord.make) }
        public var ownerIdentity: CKUserIdentity { CKUserIdentity(metadata.ownerIdentity) }
        public var participantRole: ParticipantRole { ParticipantRole(metadata.participantRole) }
        public var participantStatus: ParticipantAcceptanceStatus { ParticipantAcceptanceStatus(metadata.participantStatus) }
        public var participantPermission: ParticipantPermission { ParticipantPermission(metadata.participantPermission) }

        public func copy(with zone: NSZone? = nil) -> Any { self }
        public override func isEqual(_ object: Any?) -> Bool { (object as? Metadata)?.metadata == metadata }
        public override var hash: Int { metadata.hashValue }
    }
}

extension CKContainer {
    /// Resolves a share URL.
    /// - Throws: ``CKError/Code/unknownItem`` for a URL that names no share.
    public func shareMetadata(for url: URL, shouldFetchRootRecord: Bool = false) async throws -> CKShare.Metadata {
        let container = try configured()
        return try await mappingErrors {
            CKShare.Metadata(try await container.shareMetadata(for: url, shouldFetchRootRecord: shouldFetchRootRecord))
        }
    }

    /// Accepts a share: its records appear in the user's shared database.
    /// - Returns: the share, as the user now sees it.
    public func accept(_ metadata: CKShare.Metadata) async throws -> CKShare {
        let container = try configured()
        return try await mappingErrors { CKShare.Metadata(try await container.accept(metadata.metadata)).share }
    }

    /// A participant to add to a share, found by email address (the server resolves the
    /// address to a user when the share is saved).
    public func shareParticipant(forEmailAddress emailAddress: String) async throws -> CKShare.Participant {
        CKShare.Participant(Share.Participant(emailAddress: emailAddress))
    }

    /// A participant to add to a share, by user record ID.
    public func shareParticipant(forUserRecordID userRecordID: CKRecord.ID) async throws -> CKShare.Participant {
        CKShare.Participant(Share.Participant(userRecordName: userRecordID.recordName))
    }

    /// A discoverable user, by email address; `nil` when there is none (or they are not
    /// discoverable).
    public func userIdentity(forEmailAddress emailAddress: String) async throws -> CKUserIdentity? {
        let container = try configured()
        return try await mappingErrors { try await container.userIdentity(forEmailAddress: emailAddress).map(CKUserIdentity.init) }
    }

    /// A discoverable user, by user record ID; `nil` when there is none.
    public func userIdentity(forUserRecordID userRecordID: CKRecord.ID) async throws -> CKUserIdentity? {
        let container = try configured()
        return try await mappingErrors {
            try await container.userIdentity(forUserRecordID: userRecordID.nimbus).map(CKUserIdentity.init)
        }
    }
}
