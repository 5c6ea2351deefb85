import Foundation

extension Share {
    /// A person a share is open to: who they are, what they may do, and whether they have
    /// accepted. The SDK's counterpart of `CKShare.Participant`.
    ///
    /// ```swift
    /// share.addParticipant(.init(userRecordName: "_0b2f…", permission: .readWrite))
    /// share.addParticipant(.init(emailAddress: "ann@example.com", permission: .readOnly))
    /// ```
    public struct Participant: Sendable, Hashable {
        /// What a participant may do with the shared records.
        public enum Permission: String, Sendable, Hashable, CaseIterable {
            /// No access (a share's ``Share/publicPermission`` when only invited people may join).
            case none = "NONE"
            /// Read the shared records.
            case readOnly = "READ_ONLY"
            /// Read, change, create and delete the shared records (not the root or the share).
            case readWrite = "READ_WRITE"
        }

        /// Whether a participant has joined.
        public enum AcceptanceStatus: String, Sendable, Hashable, CaseIterable {
            /// Invited, not yet accepted: reads nothing.
            case pending = "PENDING"
            /// Accepted: reads (and with ``Permission/readWrite`` writes) the shared records.
            case accepted = "ACCEPTED"
            /// Removed by the owner, or left.
            case removed = "REMOVED"
            /// A status this SDK does not know.
            case unknown = "UNKNOWN"
        }

        /// How a participant came to the share (CloudKit JS's `type`).
        public enum Role: String, Sendable, Hashable, CaseIterable {
            /// The user who owns the shared records.
            case owner = "OWNER"
            /// Invited by the owner.
            case privateUser = "PRIVATE_USER"
            /// Joined through the URL of a share with a ``Share/publicPermission``.
            case publicUser = "PUBLIC_USER"
            /// A type this SDK does not know.
            case unknown = "UNKNOWN"
        }

        /// Who the participant is: their ``UserIdentity/userRecordID`` once known, and (in the
        /// owner's view only) the ``UserIdentity/lookupInfo`` email they were invited by.
        public var userIdentity: UserIdentity
        /// What the participant may do (change it with ``Share/setPermission(_:for:)``).
        public var permission: Permission
        /// Whether the participant has accepted (the server's; ``AcceptanceStatus/pending``
        /// for a participant not saved yet).
        public internal(set) var acceptanceStatus: AcceptanceStatus
        /// How the participant came to the share (CloudKit JS's `type`).
        public internal(set) var role: Role
        /// The participant's stable ID on the server; `nil` before the share is saved.
        public internal(set) var participantID: String?

        /// A participant named by user record name.
        public init(userRecordName: String, permission: Permission = .readOnly) {
            self.init(
                userIdentity: UserIdentity(
                    userRecordID: Record.ID(recordName: userRecordName), lookupInfo: nil, nameComponents: nil),
                permission: permission,
                acceptanceStatus: .pending, role: .privateUser, participantID: nil)
        }

        /// A participant named by email: matched, when they accept, to the container's user
        /// with that email address (the owner is not told whether such a user exists).
        public init(emailAddress: String, permission: Permission = .readOnly) {
            self.init(
                userIdentity: UserIdentity(
                    userRecordID: nil, lookupInfo: UserIdentity.LookupInfo(emailAddress: emailAddress),
                    nameComponents: nil),
                permission: permission,
                acceptanceStatus: .pending, role: .privateUser, participantID: nil)
        }

        init(
            userIdentity: UserIdentity, permission: Permission, acceptanceStatus: AcceptanceStatus, role: Role,
            participantID: String?
        ) {
            self.userIdentity = userIdentity
            self.permission = permission
            self.acceptanceStatus = acceptanceStatus
            self.role = role
            self.participantID = participantID
        }

        /// Whether both name the same person: same participant ID, user record name or email.
        func isSamePerson(as other: Participant) -> Bool {
            if let a = participantID, let b = other.participantID { return a == b }
            if let a = userIdentity.userRecordID?.recordName, let b = other.userIdentity.userRecordID?.recordName, a == b {
                return true
            }
            if let a = userIdentity.lookupInfo?.emailAddress?.lowercased(),
                let b = other.userIdentity.lookupInfo?.emailAddress?.lowercased()
            {
                return a == b
            }
            return false
        }
    }
}
