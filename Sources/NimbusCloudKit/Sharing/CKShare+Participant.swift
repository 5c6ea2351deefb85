import Foundation
import Nimbus
import NimbusProtocol

extension CKShare {
    /// What a participant may do.
    public enum ParticipantPermission: Int, Sendable, Hashable {
        case unknown = 0
        case none = 1
        case readOnly = 2
        case readWrite = 3

        init(_ permission: Share.Participant.Permission) {
            switch permission {
            case .none: self = .none
            case .readOnly: self = .readOnly
            case .readWrite: self = .readWrite
            }
        }

        var nimbus: Share.Participant.Permission {
            switch self {
            case .readOnly: return .readOnly
            case .readWrite: return .readWrite
            case .none, .unknown: return .none
            }
        }
    }

    /// How a participant takes part.
    public enum ParticipantRole: Int, Sendable, Hashable {
        case unknown = 0
        case owner = 1
        case privateUser = 3
        case publicUser = 4

        init(_ role: Share.Participant.Role) {
            switch role {
            case .owner: self = .owner
            case .privateUser: self = .privateUser
            case .publicUser: self = .publicUser
            case .unknown: self = .unknown
            }
        }
    }

    /// Whether a participant accepted.
    public enum ParticipantAcceptanceStatus: Int, Sendable, Hashable {
        case unknown = 0
        case pending = 1
        case accepted = 2
        case removed = 3

        init(_ status: Share.Participant.AcceptanceStatus) {
            switch status {
            case .pending: self = .pending
            case .accepted: self = .accepted
            case .removed: self = .removed
            case .unknown: self = .unknown
            }
        }
    }

    /// A user invited to (or joined through the URL of) a share. Get one from
    /// ``CKContainer/shareParticipant(forEmailAddress:)`` or
    /// ``CKContainer/shareParticipant(forUserRecordID:)``, set its ``permission``, and add it
    /// with ``CKShare/addParticipant(_:)``.
    ///
    /// `@unchecked Sendable`: the one stored property is `@Protected`.
    public final class Participant: NSObject, NSCopying, @unchecked Sendable {
        @Protected private var participant: Share.Participant

        init(_ participant: Share.Participant) {
            self.participant = participant
        }

        var nimbus: Share.Participant { participant }

        public var userIdentity: CKUserIdentity { CKUserIdentity(participant.userIdentity) }
        public var role: ParticipantRole { ParticipantRole(participant.role) }
        public var acceptanceStatus: ParticipantAcceptanceStatus { ParticipantAcceptanceStatus(participant.acceptanceStatus) }
        /// The server's ID for this participant, once the share is saved.
        public var participantID: String { participant.participantID ?? "" }

        public var permission: ParticipantPermission {
            get { ParticipantPermission(participant.permission) }
            set {
                var changed = participant
                changed.permission = newValue.nimbus
                participant = changed
            }
        }

        public func copy(with zone: NSZone? = nil) -> Any { Participant(participant) }

        public override func isEqual(_ object: Any?) -> Bool { (object as? Participant)?.participant == participant }
        public override var hash: Int { participant.hashValue }
    }
}
