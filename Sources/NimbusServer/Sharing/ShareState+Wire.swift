import NimbusProtocol
import NimbusStore

extension ShareState {
    /// The state as the share record stores it (a JSON text in ``SystemFields/shareState``).
    var storedText: String {
        let participants: [JSON] = participants.map { participant in
            var members: [String: JSON] = [
                "participantID": .string(participant.participantID),
                "permission": .string(participant.permission.rawValue),
                "acceptanceStatus": .string(participant.status.rawValue),
                "type": .string(participant.kind.rawValue),
            ]
            if let name = participant.userRecordName { members["userRecordName"] = .string(name) }
            if let email = participant.email { members["email"] = .string(email) }
            return .object(members)
        }
        return JSON.object([
            "shortGUID": .string(shortGUID), "owner": .string(owner),
            "publicPermission": .string(publicPermission.rawValue), "participants": .array(participants),
        ]).serialized()
    }

    /// Decodes ``storedText``; `nil` for a text the server did not write.
    init?(storedText text: String) {
        guard let json = try? JSON.parse(text), let members = json.object,
            let shortGUID = members["shortGUID"]?.string, let owner = members["owner"]?.string,
            let permission = members["publicPermission"]?.string.flatMap(Permission.init(rawValue:)),
            let list = members["participants"]?.array
        else { return nil }
        var participants: [Participant] = []
        for element in list {
            guard let item = element.object, let id = item["participantID"]?.string,
                let permission = item["permission"]?.string.flatMap(Permission.init(rawValue:)),
                let status = item["acceptanceStatus"]?.string.flatMap(Status.init(rawValue:)),
                let kind = item["type"]?.string.flatMap(Kind.init(rawValue:))
            else { return nil }
            participants.append(
                Participant(
                    participantID: id, userRecordName: item["userRecordName"]?.string, email: item["email"]?.string,
                    permission: permission, status: status, kind: kind))
        }
        self.init(shortGUID: shortGUID, owner: owner, publicPermission: permission, participants: participants)
    }

    /// The share's members as `viewer` sees them in a record dictionary: `shortGUID`, `url`,
    /// `publicPermission`, `owner`, `participants` (the owner first) and
    /// `currentUserParticipant`. Emails the owner invited are shown to the owner only.
    func wireMembers(viewer: String?, origin: String, container: String, environment: ContainerEnvironment) -> [String: JSON] {
        let ownerView = viewer == owner
        func json(_ participant: Participant) -> JSON {
            var identity: [String: JSON] = [:]
            if let name = participant.userRecordName { identity["userRecordName"] = .string(name) }
            if ownerView, let email = participant.email {
                identity["lookupInfo"] = .object(["emailAddress": .string(email)])
            }
            return .object([
                "participantID": .string(participant.participantID),
                "userIdentity": .object(identity),
                "type": .string(participant.kind.rawValue),
                "acceptanceStatus": .string(participant.status.rawValue),
                "permission": .string(participant.permission.rawValue),
            ])
        }
        // A participant sees the owner and the accepted participants; the owner sees everyone.
        let visible = ownerView ? participants : participants.filter { $0.status == .accepted || $0.userRecordName == viewer }
        var members: [String: JSON] = [
            "shortGUID": .string(shortGUID),
            "url": .string(origin + ShareLinkPage.path(container: container, environment: environment, shortGUID: shortGUID)),
            "publicPermission": .string(publicPermission.rawValue),
            "owner": json(ownerParticipant),
            "participants": .array([json(ownerParticipant)] + visible.map(json)),
        ]
        if let viewer, let me = viewer == owner ? ownerParticipant : participants.first(where: { $0.userRecordName == viewer }) {
            members["currentUserParticipant"] = json(me)
        }
        return members
    }
}

extension ShareState.Permission {
    /// Decodes a `permission` / `publicPermission` string.
    init(wire reader: WireReader) throws(CloudKitError) {
        let text = try reader.string()
        guard let permission = Self(rawValue: text) else {
            throw .badRequest("'\(reader.path)' must be NONE, READ_ONLY or READ_WRITE, got '\(text)'")
        }
        self = permission
    }
}

extension ShareInvitation {
    /// Decodes a participant of a share record in a request:
    /// `{userIdentity: {userRecordName? , lookupInfo?: {emailAddress}}, permission}`.
    init(wire reader: WireReader) throws(CloudKitError) {
        _ = try reader.object()
        let identity = try reader.optional("userIdentity")
        let name = try identity?.optionalString("userRecordName")
        let email = try identity?.optional("lookupInfo")?.optionalString("emailAddress")
        guard name != nil || email != nil else {
            throw .badRequest(
                "'\(reader.path).userIdentity' must name the participant by userRecordName or lookupInfo.emailAddress")
        }
        if let name { try NameRules.checkName(name, at: "\(reader.path).userIdentity.userRecordName") }
        if let email, email.isEmpty || email.utf8.count > 320 || !email.contains("@") {
            throw .badRequest("'\(reader.path).userIdentity.lookupInfo.emailAddress' is not an email address")
        }
        let permission = try reader.optional("permission").map { r throws(CloudKitError) in try ShareState.Permission(wire: r) } ?? .readOnly
        guard permission != .none else {
            throw .badRequest("'\(reader.path).permission' must be READ_ONLY or READ_WRITE")
        }
        self.init(userRecordName: name, email: email, permission: permission)
    }
}
