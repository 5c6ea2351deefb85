import Crypto
import Foundation
import Nimbus
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Discovering users and the user record, through the SDK against a real server.
@Suite("Users through the SDK")
struct UserDiscoverySDKTests {
    /// A container signed in as a new user with an email address and names.
    func signIn(_ server: LiveServer, _ name: String, _ given: String, _ family: String) async throws -> Container {
        let token = try await server.server.store.createUser(
            name: name, email: "\(name)@example.com", firstName: given, lastName: family,
            container: LiveServer.containerID)
        return server.anonymousContainer().with(credentials: .apiToken(server.apiToken, webAuthToken: token.token))
    }

    func names(_ given: String, _ family: String) -> PersonNameComponents {
        var components = PersonNameComponents()
        components.givenName = given
        components.familyName = family
        return components
    }

    @Test func usersWhoOptInAreFoundByEmailAndRecordIDAndNobodyElseIs() async throws {
        try await LiveServer.with { server in
            let ada = try await signIn(server, "ada", "Ada", "Lovelace")
            let grace = try await signIn(server, "grace", "Grace", "Hopper")
            let adaID = try await ada.userRecordID()
            let graceID = try await grace.userRecordID()
            #expect(try await ada.applicationPermissionStatus(for: .userDiscoverability) == .initialState)
            #expect(try await ada.requestApplicationPermission(.userDiscoverability) == .granted)
            #expect(try await ada.applicationPermissionStatus(for: .userDiscoverability) == .granted)

            let found = try await grace.discoverUserIdentities([
                .init(emailAddress: "ada@example.com"), .init(emailAddress: "grace@example.com"),
                .init(userRecordID: adaID), .init(userRecordID: graceID), .init(phoneNumber: "+1 555 0100"),
            ])
            #expect(
                found == [
                    Nimbus.UserIdentity(
                        userRecordID: adaID, lookupInfo: .init(emailAddress: "ada@example.com"),
                        nameComponents: names("Ada", "Lovelace")),
                    Nimbus.UserIdentity(
                        userRecordID: adaID, lookupInfo: .init(userRecordID: adaID),
                        nameComponents: names("Ada", "Lovelace")),
                ])

            let byEmail = try await grace.userIdentities(
                forEmailAddresses: ["ADA@example.com", "grace@example.com", "nobody@example.com"])
            #expect(Array(byEmail.keys) == ["ADA@example.com"])
            #expect(byEmail["ADA@example.com"]?.userRecordID == adaID)
            #expect(byEmail["ADA@example.com"]?.lookupInfo == .init(emailAddress: "ADA@example.com"))
            #expect(try await grace.userIdentity(forUserRecordID: adaID)?.nameComponents == names("Ada", "Lovelace"))
            #expect(try await ada.userIdentity(forUserRecordID: graceID) == nil, "Grace never opted in")
            #expect(try await ada.userIdentity(forEmailAddress: "grace@example.com") == nil)
            #expect(try await grace.userIdentities(forUserRecordIDs: []) == [:])

            #expect(try await ada.revokeApplicationPermission(.userDiscoverability) == .initialState)
            #expect(try await grace.userIdentity(forEmailAddress: "ada@example.com") == nil)
        }
    }

    @Test func serverKeysDiscoverAndAnonymousCallersCannot() async throws {
        try await LiveServer.with { server in
            let ada = try await signIn(server, "ada", "Ada", "Lovelace")
            _ = try await ada.requestApplicationPermission(.userDiscoverability)
            let key = P256.Signing.PrivateKey()
            try await server.server.store.addServerKey(
                keyID: "sdk-key", container: LiveServer.containerID, publicKeyPEM: key.publicKey.pemRepresentation)
            let admin = server.anonymousContainer().with(
                credentials: try .serverToServerKey(keyID: "sdk-key", privateKeyPEM: key.pemRepresentation))
            #expect(
                try await admin.userIdentity(forEmailAddress: "ada@example.com")?.userRecordID == ada.userRecordID())

            let anonymous = try await #require(throws: NimbusError.self) {
                try await server.anonymousContainer().discoverUserIdentities([.init(emailAddress: "ada@example.com")])
            }
            #expect(anonymous.code == .notAuthenticated)
            let noUser = try await #require(throws: NimbusError.self) {
                try await admin.requestApplicationPermission(.userDiscoverability)
            }
            #expect(noUser.code == .notAuthenticated, "discoverability is a user's own choice")
        }
    }

    @Test func theUserRecordIsFetchedAndSavedInBothDatabases() async throws {
        try await LiveServer.with { server in
            let ada = try await signIn(server, "ada", "Ada", "Lovelace")
            let grace = try await signIn(server, "grace", "Grace", "Hopper")
            let id = try await ada.userRecordID()
            for database in [ada.privateCloudDatabase, ada.publicCloudDatabase] {
                var record = try await database.record(for: id)
                #expect(record.recordType == "Users")
                #expect(record.creatorUserRecordName == id.recordName)
                record["nickname"] = "Countess"
                let saved = try await database.save(record)
                #expect(saved["nickname"] == "Countess")
            }
            var seen = try await grace.publicCloudDatabase.record(for: id)
            #expect(seen["nickname"] == "Countess")
            seen["nickname"] = "Amazing Grace"
            let denied = try await #require(throws: NimbusError.self) { try await grace.publicCloudDatabase.save(seen) }
            #expect(denied.code == .permissionFailure)
            await #expect(throws: NimbusError.self) { try await grace.privateCloudDatabase.record(for: id) }
        }
    }
}
