import Foundation
import NimbusCloudKit
import NimbusTestSupport
import Testing

/// User discovery through CloudKit's API: consent, lookups by email address and user record
/// ID (only users who consented are found), the discovery operations and share participants.
@Suite("User discovery")
struct DiscoveryTests {
    struct People {
        let ada: CKContainer
        let bob: CKContainer
        let bobID: CKRecord.ID

        /// Carol's address (she did not consent), Bob's record ID and address, a phone number.
        var lookupInfos: [CKUserIdentity.LookupInfo] {
            [
                CKUserIdentity.LookupInfo(emailAddress: "carol@example.com"),
                CKUserIdentity.LookupInfo(userRecordID: bobID),
                CKUserIdentity.LookupInfo(emailAddress: "bob@example.com"),
                CKUserIdentity.LookupInfo(phoneNumber: "+15555550100"),
            ]
        }
    }

    /// Ada, and Bob (bob@example.com, Bob Lovelace), who consents to discovery; Carol
    /// (carol@example.com) exists and does not.
    static func people(_ server: CloudKitServer) async throws -> People {
        let ada = try await server.container(user: "ada")
        let bob = CKContainer(
            identifier: CloudKitServer.containerID,
            connection: try await server.connection(user: "bob", email: "bob@example.com", firstName: "Bob", lastName: "Lovelace"))
        _ = try await server.connection(user: "carol", email: "carol@example.com")
        #expect(try await bob.applicationPermissionStatus(for: .userDiscoverability) == .initialState)
        #expect(try await bob.requestApplicationPermission(.userDiscoverability) == .granted)
        #expect(try await bob.applicationPermissionStatus(for: .userDiscoverability) == .granted)
        return People(ada: ada, bob: bob, bobID: try await bob.userRecordID())
    }

    @Test(arguments: Engine.available)
    func onlyUsersWhoConsentedAreFoundByEmailAddressOrRecordID(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let people = try await Self.people(server)
            let bob = try #require(try await people.ada.userIdentity(forEmailAddress: "bob@example.com"))
            #expect(bob.userRecordID == people.bobID)
            #expect(bob.nameComponents?.givenName == "Bob")
            #expect(bob.lookupInfo?.emailAddress == "bob@example.com")
            #expect(try await people.ada.userIdentity(forUserRecordID: people.bobID)?.userRecordID == people.bobID)
            #expect(try await people.ada.userIdentity(forEmailAddress: "carol@example.com") == nil)
            #expect(try await people.ada.userIdentity(forEmailAddress: "nobody@example.com") == nil)
            #expect(try await people.ada.userIdentity(forPhoneNumber: "+15555550100") == nil)

            let viaHandler: CKUserIdentity? = try await withCheckedThrowingContinuation { continuation in
                people.ada.discoverUserIdentity(withEmailAddress: "bob@example.com") { identity, error in
                    if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: identity) }
                }
            }
            #expect(viaHandler?.userRecordID == people.bobID)

            // Nobody signed in: discovery is refused, as CloudKit refuses it without an account.
            let nobody = try await server.container(user: nil)
            do {
                _ = try await nobody.requestApplicationPermission(.userDiscoverability)
                Issue.record("a permission was granted with nobody signed in")
            } catch let error as CKError {
                #expect(error.code == .notAuthenticated, "\(error)")
            }
        }
    }

    @Test func theDiscoveryOperationsReportEachUserFoundThenTheirResult() async throws {
        try await CloudKitServer.with { server in
            let people = try await Self.people(server)
            let log = CallbackLog()
            let discover = CKDiscoverUserIdentitiesOperation(userIdentityLookupInfos: people.lookupInfos)
            discover.userIdentityDiscoveredBlock = { identity, info in
                let found = identity.userRecordID == people.bobID ? "bob" : "someone else"
                log.append("found \(found) by \(info.emailAddress ?? info.userRecordID.map { _ in "record ID" } ?? "?")")
            }
            discover.discoverUserIdentitiesResultBlock = { result in log.append("result \((try? result.get()) != nil)") }
            discover.discoverUserIdentitiesCompletionBlock = { error in log.append("completion \(error == nil)") }
            try await run(discover, on: people.ada)
            #expect(log.events == ["found bob by record ID", "found bob by bob@example.com", "result true", "completion true"])

            // No address books on a Nimbus server: discovering "all" finds no one, and succeeds.
            let all = CKDiscoverAllUserIdentitiesOperation()
            let allLog = CallbackLog()
            all.userIdentityDiscoveredBlock = { _ in allLog.append("found") }
            all.discoverAllUserIdentitiesResultBlock = { result in allLog.append("result \((try? result.get()) != nil)") }
            try await run(all, on: people.ada)
            #expect(allLog.events == ["result true"])
        }
    }

    @Test func shareParticipantsAreMadeFromEmailAddressesAndRecordIDsButNotPhoneNumbers() async throws {
        try await CloudKitServer.with { server in
            let people = try await Self.people(server)
            let log = CallbackLog()
            let fetch = CKFetchShareParticipantsOperation(userIdentityLookupInfos: people.lookupInfos)
            fetch.perShareParticipantResultBlock = { info, result in
                switch result {
                case .success(let participant):
                    let who = participant.userIdentity.lookupInfo?.emailAddress
                        ?? participant.userIdentity.userRecordID?.recordName ?? "?"
                    log.append("participant \(who == people.bobID.recordName ? "bob's record" : who)")
                case .failure(let error as CKError):
                    log.append("failed \(info.phoneNumber ?? "?") \(error.code)")
                case .failure(let error):
                    log.append("failed \(error)")
                }
            }
            fetch.shareParticipantFetchedBlock = { _ in log.append("fetched") }
            fetch.fetchShareParticipantsResultBlock = { result in
                if case .failure(let error as CKError) = result { log.append("result \(error.code)") } else { log.append("result ok") }
            }
            try await run(fetch, on: people.ada)
            #expect(log.events == [
                "participant carol@example.com", "fetched", "participant bob's record", "fetched",
                "participant bob@example.com", "fetched", "failed +15555550100 invalidArguments", "result partialFailure",
            ])

            // The participant found by record ID is one a share can be saved with.
            let participant = try await people.ada.shareParticipant(forUserRecordID: people.bobID)
            participant.permission = .readWrite
            let zone = CKRecordZone(zoneName: "Shared")
            _ = try await people.ada.privateCloudDatabase.save(zone)
            let share = CKShare(recordZoneID: zone.zoneID)
            share.addParticipant(participant)
            let saved = try await people.ada.privateCloudDatabase.save(share)
            #expect((saved as? CKShare)?.participants.contains { $0.userIdentity.userRecordID == people.bobID } == true)
        }
    }

    /// Adds `operation` to `container` and returns when it has finished (its completion block ran).
    func run(_ operation: CKOperation, on container: CKContainer) async throws {
        try await withTimeout {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                operation.completionBlock = { continuation.resume() }
                container.add(operation)
            }
        }
    }
}
