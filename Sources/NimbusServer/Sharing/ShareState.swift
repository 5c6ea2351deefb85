import NimbusProtocol
import NimbusStore

/// What a share record holds beyond its fields: its short GUID, its public permission and
/// its participants. The server keeps it in the share record itself (a reserved field,
/// ``SystemFields/shareState``), so a share, its participants and their acceptance change
/// in the same transaction as the record, with its change tag guarding concurrent edits.
struct ShareState: Sendable, Equatable {
    enum Permission: String, Sendable, CaseIterable {
        case none = "NONE"
        case readOnly = "READ_ONLY"
        case readWrite = "READ_WRITE"
    }

    enum Status: String, Sendable {
        case pending = "PENDING"
        case accepted = "ACCEPTED"
        case removed = "REMOVED"
    }

    enum Kind: String, Sendable {
        case owner = "OWNER"
        case privateUser = "PRIVATE_USER"
        case publicUser = "PUBLIC_USER"
    }

    struct Participant: Sendable, Equatable {
        var participantID: String
        /// The user's record name in the container, once known.
        var userRecordName: String?
        /// The email the owner invited, when invited by email.
        var email: String?
        var permission: Permission
        var status: Status
        var kind: Kind
    }

    var shortGUID: String
    /// The owner's user record name.
    var owner: String
    var publicPermission: Permission
    /// Every participant but the owner.
    var participants: [Participant]

    /// The owner as a participant.
    var ownerParticipant: Participant {
        Participant(
            participantID: "owner", userRecordName: owner, email: nil, permission: .readWrite, status: .accepted,
            kind: .owner)
    }

    /// The accepted participant `user` is, if any (the owner included).
    func acceptedParticipant(_ userRecordName: String) -> Participant? {
        if userRecordName == owner { return ownerParticipant }
        return participants.first { $0.userRecordName == userRecordName && $0.status == .accepted }
    }

    /// The participant `user` is or was invited as: by record name, or by an email that is theirs.
    func invitation(for user: UserIdentity) -> Participant? {
        if user.recordName == owner { return ownerParticipant }
        if let named = participants.first(where: { $0.userRecordName == user.recordName }) { return named }
        guard let email = user.email.map(UserIdentity.emailKey) else { return nil }
        return participants.first { $0.userRecordName == nil && $0.email.map(UserIdentity.emailKey) == email }
    }
}

/// One participant as the owner's request names it.
struct ShareInvitation: Sendable, Equatable {
    var userRecordName: String?
    var email: String?
    var permission: ShareState.Permission
}

extension ShareState {
    /// The state after the owner saves the share with `publicPermission` and `invitations`
    /// (CloudKit's rules: participants the request no longer names are removed; one named
    /// again keeps its acceptance, or is invited anew if it was removed; changing the public
    /// permission removes the pending ones, and setting it to NONE removes the public users).
    /// A removed participant stays in the list with status REMOVED, as the owner sees it in
    /// CloudKit; it grants nothing.
    static func saved(
        previous: ShareState?, owner: String, publicPermission: Permission?, invitations: [ShareInvitation]?,
        newID: () -> String
    ) -> ShareState {
        var state =
            previous
            ?? ShareState(shortGUID: newID(), owner: owner, publicPermission: .none, participants: [])
        let permission = publicPermission ?? state.publicPermission
        if permission != state.publicPermission {
            state.remove { $0.status == .pending }
            if permission == .none { state.remove { $0.kind == .publicUser } }
            state.publicPermission = permission
        }
        guard let invitations else { return state }
        var named: Set<String> = []
        for invitation in invitations where invitation.userRecordName != owner {
            if let index = state.participants.firstIndex(where: { $0.matches(invitation) && $0.kind == .privateUser }) {
                let id = state.participants[index].participantID
                guard !named.contains(id) else { continue }
                named.insert(id)
                state.participants[index].permission = invitation.permission
                if let name = invitation.userRecordName { state.participants[index].userRecordName = name }
                if state.participants[index].status == .removed { state.participants[index].status = .pending }
            } else if !state.participants.contains(where: { named.contains($0.participantID) && $0.matches(invitation) }) {
                let participant = Participant(
                    participantID: newID(), userRecordName: invitation.userRecordName, email: invitation.email,
                    permission: invitation.permission, status: .pending, kind: .privateUser)
                named.insert(participant.participantID)
                state.participants.append(participant)
            }
        }
        state.remove { $0.kind == .privateUser && !named.contains($0.participantID) }
        return state
    }

    /// Marks the participants `predicate` picks as REMOVED (they keep their place in the list).
    private mutating func remove(where predicate: (Participant) -> Bool) {
        for index in participants.indices where participants[index].status != .removed && predicate(participants[index]) {
            participants[index].status = .removed
        }
    }

    /// The users that take part now (pending or accepted), by record name.
    var currentUserRecordNames: Set<String> {
        Set(participants.filter { $0.status != .removed }.compactMap(\.userRecordName))
    }

    /// The state after `user` accepts: an invited participant becomes ACCEPTED (bound to the
    /// user's record name); anyone else becomes a PUBLIC_USER when the share is public.
    /// `nil` when the share is not open to them.
    func accepting(_ user: UserIdentity, newID: () -> String) -> ShareState? {
        var state = self
        if user.recordName == owner { return state }
        if let index = participants.firstIndex(where: { $0.userRecordName == user.recordName })
            ?? participants.firstIndex(where: {
                $0.userRecordName == nil && $0.email != nil
                    && $0.email.map(UserIdentity.emailKey) == user.email.map(UserIdentity.emailKey)
            })
        {
            guard state.participants[index].status != .removed else { return nil }
            state.participants[index].userRecordName = user.recordName
            state.participants[index].status = .accepted
            return state
        }
        guard publicPermission != .none else { return nil }
        state.participants.append(
            Participant(
                participantID: newID(), userRecordName: user.recordName, email: nil, permission: publicPermission,
                status: .accepted, kind: .publicUser))
        return state
    }

    /// The state after `userRecordName` leaves: REMOVED, as CloudKit shows a participant who
    /// left; they may be invited again.
    func leaving(_ userRecordName: String) -> ShareState {
        var state = self
        state.remove { $0.userRecordName == userRecordName }
        return state
    }
}

extension ShareState.Participant {
    func matches(_ invitation: ShareInvitation) -> Bool {
        if let name = invitation.userRecordName, name == userRecordName { return true }
        if let email = invitation.email, let mine = self.email {
            return UserIdentity.emailKey(email) == UserIdentity.emailKey(mine)
        }
        return false
    }
}
