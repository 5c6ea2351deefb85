import NimbusProtocol
import NimbusStore

/// User discovery: `users/discover`, `users/lookup/email`, `users/lookup/id`,
/// `users/lookup/contacts` and the Nimbus extension `users/discoverability`.
///
/// Only users who opted in to discovery in the container are ever found. Anyone else (a user
/// who did not opt in, an unknown address) is simply absent from the answer, so a lookup never
/// tells whether an email address belongs to a user. Answers carry no email address the
/// caller did not send.
extension CloudKitAPI {
    /// One `lookupInfos` entry (or one `users` entry of the lookups).
    struct LookupInfo: Sendable, Equatable {
        var emailAddress: String?
        var phoneNumber: String?
        var userRecordName: String?

        var json: JSON {
            var members: [String: JSON] = [:]
            if let emailAddress { members["emailAddress"] = .string(emailAddress) }
            if let phoneNumber { members["phoneNumber"] = .string(phoneNumber) }
            if let userRecordName { members["userRecordName"] = .string(userRecordName) }
            return .object(members)
        }

        /// Whether the user is the one this entry asks for. Nimbus users have no phone numbers.
        func matches(_ user: UserIdentity) -> Bool {
            if let userRecordName, userRecordName == user.recordName { return true }
            if let emailAddress, let email = user.email {
                return UserIdentity.emailKey(emailAddress) == UserIdentity.emailKey(email)
            }
            return false
        }
    }

    /// `users/discover`: `{lookupInfos: [{emailAddress | phoneNumber | userRecordName}]}` →
    /// `{users: [{userRecordName, nameComponents, lookupInfo}]}`, one entry per lookup info
    /// that found a discoverable user, in request order.
    ///
    /// As a GET ("Discovering All User Identities") it answers the discoverable users in the
    /// caller's address book. Nimbus keeps no address books (it has no contacts to match), so
    /// the answer is `{users: []}` for every caller allowed to ask; a body is ignored.
    func discoverUsers(_ call: APICall) async throws -> JSON {
        if call.method == "GET" {
            try Self.checkDiscoveryCaller(call)
            return .object(["users": .array([])])
        }
        let infos = try lookupInfos(
            call, member: "lookupInfos", keys: ["emailAddress", "phoneNumber", "userRecordName"])
        let found = try await discoverable(infos, call)
        var users: [JSON] = []
        for info in infos {
            guard let user = found.first(where: info.matches) else { continue }
            var nameComponents: [String: JSON] = [:]
            if let firstName = user.firstName { nameComponents["givenName"] = .string(firstName) }
            if let lastName = user.lastName { nameComponents["familyName"] = .string(lastName) }
            users.append(
                .object([
                    "userRecordName": .string(user.recordName), "nameComponents": .object(nameComponents),
                    "lookupInfo": info.json,
                ]))
        }
        return .object(["users": .array(users)])
    }

    /// `users/lookup/contacts` ("Fetching Contacts"): the discoverable users in the caller's
    /// address book, `{users: []}` as for GET `users/discover`: Nimbus keeps no address books.
    func lookUpContacts(_ call: APICall) async throws -> JSON {
        try Self.checkDiscoveryCaller(call)
        return .object(["users": .array([])])
    }

    /// `users/lookup/email`: `{users: [{emailAddress}]}` → `{users: [{userRecordName,
    /// firstName, lastName, emailAddress}]}`, the address as the caller sent it.
    func lookUpUsersByEmail(_ call: APICall) async throws -> JSON {
        let infos = try lookupInfos(call, member: "users", keys: ["emailAddress"])
        return try await userDictionaries(infos, call) { info, members in
            members["emailAddress"] = info.emailAddress.map(JSON.string)
        }
    }

    /// `users/lookup/id`: `{users: [{userRecordName}]}` → `{users: [{userRecordName,
    /// firstName, lastName}]}`.
    func lookUpUsersByRecordName(_ call: APICall) async throws -> JSON {
        let infos = try lookupInfos(call, member: "users", keys: ["userRecordName"])
        return try await userDictionaries(infos, call) { _, _ in }
    }

    /// `users/discoverability` (Nimbus extension): `{discoverable, userRecordName}` of the
    /// signed-in user; a POST with `{discoverable: true | false}` opts in or out first.
    func discoverability(_ call: APICall) async throws -> JSON {
        guard let user = call.identity.user else {
            throw CloudKitError(
                .authenticationRequired, "discoverability is the signed-in user's choice: pass ckWebAuthToken")
        }
        let discoverable: Bool
        if let wanted = try call.body.optionalBool("discoverable") {
            _ = try await accounts.setDiscoverable(wanted, userName: user.name, container: user.container)
            discoverable = wanted
        } else {
            let found = try await accounts.discoverableUsers(
                emailAddresses: [], recordNames: [user.recordName], container: user.container)
            discoverable = !found.isEmpty
        }
        return .object(["discoverable": .bool(discoverable), "userRecordName": .string(user.recordName)])
    }

    // MARK: - Helpers

    /// The `{userRecordName, firstName?, lastName?}` user dictionaries of the lookups that
    /// found a discoverable user, in request order.
    private func userDictionaries(
        _ infos: [LookupInfo], _ call: APICall, extra: (LookupInfo, inout [String: JSON]) -> Void
    ) async throws -> JSON {
        let found = try await discoverable(infos, call)
        var users: [JSON] = []
        for info in infos {
            guard let user = found.first(where: info.matches) else { continue }
            var members: [String: JSON] = ["userRecordName": .string(user.recordName)]
            if let firstName = user.firstName { members["firstName"] = .string(firstName) }
            if let lastName = user.lastName { members["lastName"] = .string(lastName) }
            extra(info, &members)
            users.append(.object(members))
        }
        return .object(["users": .array(users)])
    }

    private func discoverable(_ infos: [LookupInfo], _ call: APICall) async throws -> [UserIdentity] {
        try await accounts.discoverableUsers(
            emailAddresses: infos.compactMap(\.emailAddress), recordNames: infos.compactMap(\.userRecordName),
            container: call.identity.container)
    }

    /// Discovery needs a signed-in user or a server-to-server key.
    private static func checkDiscoveryCaller(_ call: APICall) throws(CloudKitError) {
        guard call.identity.caller != nil else {
            throw CloudKitError(
                .authenticationRequired,
                "discovering users needs a signed-in user (ckWebAuthToken) or a server-to-server key")
        }
    }

    /// Reads the array `member` of lookup dictionaries, each with one of `keys`; discovery
    /// needs a signed-in user or a server-to-server key.
    private func lookupInfos(_ call: APICall, member: String, keys: [String]) throws(CloudKitError) -> [LookupInfo] {
        try Self.checkDiscoveryCaller(call)
        let readers = try call.body.required(member).array()
        guard readers.count <= ProtocolLimits.maxOperations else {
            throw CloudKitError(
                .limitExceeded,
                "\(readers.count) users in one request; the limit is \(ProtocolLimits.maxOperations): split the request"
            )
        }
        var infos: [LookupInfo] = []
        for reader in readers {
            let object = try reader.object()
            if let unknown = object.keys.sorted().first(where: { !keys.contains($0) }) {
                throw CloudKitError.badRequest(
                    "'\(reader.path).\(unknown)' is not a lookup key here; expected " + keys.joined(separator: " or "))
            }
            let info = LookupInfo(
                emailAddress: try reader.optionalString("emailAddress"),
                phoneNumber: try reader.optionalString("phoneNumber"),
                userRecordName: try reader.optionalString("userRecordName"))
            for key in keys {
                if let value = object[key]?.string { try NameRules.checkName(value, at: "\(reader.path).\(key)") }
            }
            guard info != LookupInfo() else {
                throw CloudKitError.badRequest("'\(reader.path)' needs " + keys.joined(separator: " or "))
            }
            infos.append(info)
        }
        return infos
    }
}
