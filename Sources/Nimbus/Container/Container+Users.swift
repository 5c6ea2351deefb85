import Foundation
import NimbusProtocol

/// A user found by discovery: their user record ID and name. CloudKit's `CKUserIdentity`.
///
/// Only users who opted in to discovery in the container are ever found
/// (``Container/requestApplicationPermission(_:)``), and an identity never carries an email
/// address the caller did not already know.
public struct UserIdentity: Sendable, Hashable {
    /// How a user is looked up: by email address, phone number or user record ID.
    /// CloudKit's `CKUserIdentity.LookupInfo`.
    public struct LookupInfo: Sendable, Hashable {
        public var emailAddress: String?
        public var phoneNumber: String?
        public var userRecordID: Record.ID?

        public init(emailAddress: String) { self.emailAddress = emailAddress }
        /// Nimbus users have no phone numbers: a phone number finds no one on a Nimbus server.
        public init(phoneNumber: String) { self.phoneNumber = phoneNumber }
        public init(userRecordID: Record.ID) { self.userRecordID = userRecordID }

        init(emailAddress: String?, phoneNumber: String?, userRecordID: Record.ID?) {
            self.emailAddress = emailAddress
            self.phoneNumber = phoneNumber
            self.userRecordID = userRecordID
        }

        var wireJSON: JSON {
            var members: [String: JSON] = [:]
            if let emailAddress { members["emailAddress"] = .string(emailAddress) }
            if let phoneNumber { members["phoneNumber"] = .string(phoneNumber) }
            if let userRecordID { members["userRecordName"] = .string(userRecordID.recordName) }
            return .object(members)
        }

        init(wire json: JSON) {
            self.init(
                emailAddress: json["emailAddress"]?.string, phoneNumber: json["phoneNumber"]?.string,
                userRecordID: json["userRecordName"]?.string.map { Record.ID(recordName: $0) })
        }
    }

    /// The user's record ID in this container (the user record in the default zone).
    public var userRecordID: Record.ID?
    /// What found the user.
    public var lookupInfo: LookupInfo?
    /// The user's given and family names, as far as they are known.
    public var nameComponents: PersonNameComponents?
    /// Whether the user has an account on the server: always `true` for a discovered user.
    public var hasiCloudAccount: Bool

    public init(
        userRecordID: Record.ID?, lookupInfo: LookupInfo?, nameComponents: PersonNameComponents?,
        hasiCloudAccount: Bool = true
    ) {
        self.userRecordID = userRecordID
        self.lookupInfo = lookupInfo
        self.nameComponents = nameComponents
        self.hasiCloudAccount = hasiCloudAccount
    }

    /// From a `users/lookup` user dictionary `{userRecordName, firstName?, lastName?, emailAddress?}`.
    init(userDictionary json: JSON, lookupInfo: LookupInfo) throws {
        guard let name = json["userRecordName"]?.string else {
            throw NimbusError.malformedResponse("a user without userRecordName")
        }
        var components = PersonNameComponents()
        components.givenName = json["firstName"]?.string
        components.familyName = json["lastName"]?.string
        self.init(userRecordID: Record.ID(recordName: name), lookupInfo: lookupInfo, nameComponents: components)
    }
}

/// Permissions a user grants the app. CloudKit's `CKContainer.ApplicationPermissions`.
public struct ApplicationPermissions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Other users of the container may find this user by email address or record ID.
    public static let userDiscoverability = ApplicationPermissions(rawValue: 1)
}

/// Whether the user granted a permission. CloudKit's `CKContainer.ApplicationPermissionStatus`.
public enum ApplicationPermissionStatus: Sendable, Hashable {
    /// Not granted (never asked, or revoked).
    case initialState
    /// The server could not answer.
    case couldNotComplete
    /// The user refused.
    case denied
    case granted
}

extension Container {
    /// The discoverable users among `lookupInfos` (`users/discover`): one identity per lookup
    /// info that found a user who opted in to discovery, in the order asked. Everyone else is
    /// absent, whether or not they exist.
    ///
    /// ```swift
    /// let friends = try await container.discoverUserIdentities([
    ///     .init(emailAddress: "ada@example.com"), .init(userRecordID: someoneID)])
    /// ```
    public func discoverUserIdentities(_ lookupInfos: [UserIdentity.LookupInfo]) async throws -> [UserIdentity] {
        guard !lookupInfos.isEmpty else { return [] }
        let response = try await publicCloudDatabase.send(
            "users/discover", body: .object(["lookupInfos": .array(lookupInfos.map(\.wireJSON))]))
        return try Self.discoveredIdentities(response)
    }

    /// The discoverable users in the signed-in user's address book (GET `users/discover`,
    /// CloudKit's "Discovering All User Identities"). A Nimbus server keeps no address books,
    /// so it finds no one; the request still fails as CloudKit's does without a signed-in user.
    public func discoverAllUserIdentities() async throws -> [UserIdentity] {
        try Self.discoveredIdentities(try await publicCloudDatabase.send("users/discover", method: .get, body: nil))
    }

    /// The identities of a `users/discover` answer `{users: [{userRecordName, nameComponents?, lookupInfo?}]}`.
    private static func discoveredIdentities(_ response: JSON) throws -> [UserIdentity] {
        try (response["users"]?.array ?? []).map { entry in
            guard let name = entry["userRecordName"]?.string else {
                throw NimbusError.malformedResponse("users/discover returned a user without userRecordName")
            }
            var components = PersonNameComponents()
            components.givenName = entry["nameComponents"]?["givenName"]?.string
            components.familyName = entry["nameComponents"]?["familyName"]?.string
            return UserIdentity(
                userRecordID: Record.ID(recordName: name),
                lookupInfo: entry["lookupInfo"].map(UserIdentity.LookupInfo.init),
                nameComponents: components)
        }
    }

    /// The discoverable users with these email addresses (`users/lookup/email`), keyed by the
    /// address as given; addresses of no discoverable user are absent.
    public func userIdentities(forEmailAddresses emailAddresses: [String]) async throws -> [String: UserIdentity] {
        guard !emailAddresses.isEmpty else { return [:] }
        let response = try await publicCloudDatabase.send(
            "users/lookup/email",
            body: .object(["users": .array(emailAddresses.map { .object(["emailAddress": .string($0)]) })]))
        var identities: [String: UserIdentity] = [:]
        for user in response["users"]?.array ?? [] {
            guard let email = user["emailAddress"]?.string else {
                throw NimbusError.malformedResponse("users/lookup/email returned a user without emailAddress")
            }
            identities[email] = try UserIdentity(userDictionary: user, lookupInfo: .init(emailAddress: email))
        }
        return identities
    }

    /// The discoverable user with this email address, or `nil`.
    public func userIdentity(forEmailAddress emailAddress: String) async throws -> UserIdentity? {
        try await userIdentities(forEmailAddresses: [emailAddress])[emailAddress]
    }

    /// The discoverable users with these user record IDs (`users/lookup/id`); the IDs of no
    /// discoverable user are absent.
    public func userIdentities(forUserRecordIDs userRecordIDs: [Record.ID]) async throws -> [Record.ID: UserIdentity] {
        guard !userRecordIDs.isEmpty else { return [:] }
        let response = try await publicCloudDatabase.send(
            "users/lookup/id",
            body: .object(["users": .array(userRecordIDs.map { .object(["userRecordName": .string($0.recordName)]) })]))
        var identities: [Record.ID: UserIdentity] = [:]
        for user in response["users"]?.array ?? [] {
            let id = Record.ID(recordName: user["userRecordName"]?.string ?? "")
            identities[id] = try UserIdentity(userDictionary: user, lookupInfo: .init(userRecordID: id))
        }
        return identities
    }

    /// The discoverable user with this user record ID, or `nil`.
    public func userIdentity(forUserRecordID userRecordID: Record.ID) async throws -> UserIdentity? {
        try await userIdentities(forUserRecordIDs: [userRecordID])[userRecordID]
    }

    /// Grants a permission for the signed-in user: for ``ApplicationPermissions/userDiscoverability``,
    /// makes them discoverable in this container (Nimbus extension `users/discoverability`;
    /// CloudKit asks the user in a system dialog, so ask in your app before calling this).
    /// - Returns: ``ApplicationPermissionStatus/granted``.
    public func requestApplicationPermission(
        _ permission: ApplicationPermissions
    ) async throws -> ApplicationPermissionStatus {
        try await setDiscoverability(permission, to: true)
    }

    /// Withdraws a permission: the signed-in user is no longer discoverable (Nimbus extension).
    /// - Returns: ``ApplicationPermissionStatus/initialState``.
    public func revokeApplicationPermission(
        _ permission: ApplicationPermissions
    ) async throws -> ApplicationPermissionStatus {
        try await setDiscoverability(permission, to: false)
    }

    /// Whether the signed-in user granted a permission: ``ApplicationPermissionStatus/granted``
    /// or ``ApplicationPermissionStatus/initialState``.
    public func applicationPermissionStatus(
        for permission: ApplicationPermissions
    ) async throws -> ApplicationPermissionStatus {
        try await setDiscoverability(permission, to: nil)
    }

    private func setDiscoverability(
        _ permission: ApplicationPermissions, to value: Bool?
    ) async throws -> ApplicationPermissionStatus {
        guard permission == .userDiscoverability else {
            throw NimbusError(.invalidArguments, "the only application permission is userDiscoverability")
        }
        let response: JSON
        if let value {
            response = try await publicCloudDatabase.send(
                "users/discoverability", body: .object(["discoverable": .bool(value)]))
        } else {
            response = try await publicCloudDatabase.send("users/discoverability", method: .get, body: nil)
        }
        guard let discoverable = response["discoverable"]?.bool else {
            throw NimbusError.malformedResponse("users/discoverability returned no discoverable flag")
        }
        return discoverable ? .granted : .initialState
    }
}
