import Foundation
import NimbusProtocol

// The wire forms of docs/SHARING.md: a record's `parent` and `share`, a share record's
// `publicPermission`, `participants`, `owner`, `currentUserParticipant`, `shortGUID`, `url`.

extension Record {
    /// Reads the members of a record dictionary that NimbusProtocol's record leaves out:
    /// `parent`, `share`, and a share record's members.
    mutating func readSharingMembers(from json: JSON) {
        guard let members = json.object else { return }
        parent = members["parent"].flatMap(Reference.init(sharingWire:))
        share = members["share"].flatMap(Reference.init(sharingWire:))
        parentChanged = false
        if recordType == Share.recordType {
            shareState = Share.State(wire: members)
        }
    }

    /// Adds `parent`, `share` and a share record's members to a record dictionary sent in
    /// `records/modify`.
    func addingSharingMembers(to members: inout [String: JSON]) {
        if let parent {
            members["parent"] = parent.sharingWireJSON
        } else if parentChanged {
            members["parent"] = .null
        }
        if let share { members["share"] = share.sharingWireJSON }
        if let shareState { shareState.addSentMembers(to: &members) }
    }

    /// The members of ``encodeSystemFields()`` beyond the identity and stamps, in sorted
    /// key order: `parent`, `share`, `shareState`.
    var sharingSystemMembers: (parent: JSON?, share: JSON?, shareState: JSON?) {
        (parent?.sharingWireJSON, share?.sharingWireJSON, shareState?.wireJSON)
    }
}

extension Reference {
    /// A `parent` or `share` member: `{recordName, action?, zoneID?}`; `nil` for `null` or a
    /// value that is not one.
    init?(sharingWire json: JSON) {
        guard let name = json["recordName"]?.string, !name.isEmpty else { return nil }
        let action = json["action"]?.string.flatMap(Action.init(rawValue:)) ?? .none
        let zoneID = json["zoneID"].flatMap { try? ZoneID(wire: WireReader($0)) }
        self.init(recordName: name, zoneID: zoneID, action: action)
    }

    var sharingWireJSON: JSON {
        var members: [String: JSON] = ["recordName": .string(recordName), "action": .string(action.rawValue)]
        if let zoneID { members["zoneID"] = zoneID.wireJSON }
        return .object(members)
    }
}

extension Share.State {
    init(wire members: [String: JSON]) {
        self.init()
        publicPermission =
            members["publicPermission"]?.string.flatMap(Share.Participant.Permission.init(rawValue:))
            ?? Share.Participant.Permission.none
        participants = (members["participants"]?.array ?? []).compactMap(Share.Participant.init(wire:))
        owner = members["owner"].flatMap(Share.Participant.init(wire:))
        currentUserParticipant = members["currentUserParticipant"].flatMap(Share.Participant.init(wire:))
        shortGUID = members["shortGUID"]?.string
        url = members["url"]?.string.flatMap(URL.init(string:))
    }

    /// Everything, for a local cache (``Record/encodeSystemFields()``).
    var wireJSON: JSON {
        var members: [String: JSON] = [
            "publicPermission": .string(publicPermission.rawValue),
            "participants": .array(participants.map(\.wireJSON)),
        ]
        if let owner { members["owner"] = owner.wireJSON }
        if let currentUserParticipant { members["currentUserParticipant"] = currentUserParticipant.wireJSON }
        if let shortGUID { members["shortGUID"] = .string(shortGUID) }
        if let url { members["url"] = .string(url.absoluteString) }
        return .object(members)
    }

    /// What a save sends: the permission and the whole list of participants other than the
    /// owner (the server adds the owner), each as `{userIdentity, permission}`.
    func addSentMembers(to members: inout [String: JSON]) {
        members["publicPermission"] = .string(publicPermission.rawValue)
        members["participants"] = .array(
            participants.filter { $0.role != .owner }.map { participant in
                .object([
                    "userIdentity": participant.userIdentity.sentWireJSON,
                    "permission": .string(participant.permission.rawValue),
                ])
            })
    }
}

extension Share.Participant {
    init?(wire json: JSON) {
        guard json.object != nil else { return nil }
        self.init(
            userIdentity: json["userIdentity"].map(UserIdentity.init(shareWire:))
                ?? UserIdentity(userRecordID: nil, lookupInfo: nil, nameComponents: nil),
            permission: json["permission"]?.string.flatMap(Permission.init(rawValue:)) ?? Permission.none,
            acceptanceStatus: json["acceptanceStatus"]?.string.map { AcceptanceStatus(rawValue: $0) ?? .unknown }
                ?? .pending,
            role: json["type"]?.string.map { Role(rawValue: $0) ?? .unknown } ?? .privateUser,
            participantID: json["participantID"]?.string)
    }

    var wireJSON: JSON {
        var members: [String: JSON] = [
            "userIdentity": userIdentity.shareWireJSON,
            "permission": .string(permission.rawValue),
            "acceptanceStatus": .string(acceptanceStatus.rawValue),
            "type": .string(role.rawValue),
        ]
        if let participantID { members["participantID"] = .string(participantID) }
        return .object(members)
    }
}

extension UserIdentity {
    /// A share's `userIdentity` or `ownerIdentity`: `{userRecordName?, lookupInfo?:
    /// {emailAddress}, nameComponents?: {givenName, familyName}}`.
    init(shareWire json: JSON) {
        var components: PersonNameComponents?
        if let name = json["nameComponents"] {
            var parts = PersonNameComponents()
            parts.givenName = name["givenName"]?.string
            parts.familyName = name["familyName"]?.string
            components = parts
        }
        self.init(
            userRecordID: json["userRecordName"]?.string.map { Record.ID(recordName: $0) },
            lookupInfo: json["lookupInfo"]?["emailAddress"]?.string.map(LookupInfo.init(emailAddress:)),
            nameComponents: components)
    }

    /// Every member, for a local cache.
    var shareWireJSON: JSON {
        var members = sentMembers
        var name: [String: JSON] = [:]
        if let given = nameComponents?.givenName { name["givenName"] = .string(given) }
        if let family = nameComponents?.familyName { name["familyName"] = .string(family) }
        if nameComponents != nil { members["nameComponents"] = .object(name) }
        return .object(members)
    }

    /// What names a participant in a save: the record name, or the email to look up.
    var sentWireJSON: JSON { .object(sentMembers) }

    private var sentMembers: [String: JSON] {
        var members: [String: JSON] = [:]
        if let userRecordID { members["userRecordName"] = .string(userRecordID.recordName) }
        if let email = lookupInfo?.emailAddress { members["lookupInfo"] = .object(["emailAddress": .string(email)]) }
        return members
    }
}
