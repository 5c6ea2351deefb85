import Foundation
import NIOWebSocket
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing
import WSCore

/// A user deletes their account: nothing of theirs is left or readable, others keep theirs,
/// and their public records stay or go as the container says.
@Suite("Account deletion")
struct AccountDeletionTests {
    @Test(arguments: Engine.available)
    func deletingAnAccountRemovesEverythingOfTheirs(engine: Engine) async throws {
        let outbox = MailOutbox()
        try await TestServer.withSignIn(engine, outbox: outbox) { server in
            try await server.enablePasswords()
            let (jo, _) = try await server.signedUp("jo@example.com", outbox: outbox)
            let bob = try await server.user("bob")
            let owner = try #require(jo.userRecordName)
            _ = try await jo.createZone("Notes")
            #expect(try await jo.modify("Notes", [op("create", "secret", fields: ["title": "mine"])]).status == 200)
            _ = try await jo.subscribe(zoneSubscription("notes", zone: "Notes"))
            #expect(try await jo.modify("_defaultZone", [op("create", "jo-public", fields: ["title": "hi"])], scope: "public").status == 200)
            #expect(try await bob.modify("_defaultZone", [op("create", "bob-public", fields: ["title": "yo"])], scope: "public").status == 200)
            let push = try await PushTestDevice.connect(jo, deviceID: "jo-phone")

            let unconfirmed = try await jo.post("accounts/delete", [:])
            #expect(unconfirmed.serverErrorCode == "BAD_REQUEST")
            let deleted = try await jo.post("accounts/delete", ["confirm": "DELETE"])
            #expect(deleted["status"] == "DELETED")
            #expect(deleted["publicRecordsDeleted"] == 0)

            #expect(try await jo.get("users/current").serverErrorCode == "AUTHENTICATION_FAILED")
            #expect(try await push.closed()?.closeCode == .policyViolation)
            for (table, column) in [
                ("databases", "owner"), ("subscriptions", "owner"), ("user_identities", "record_name"),
            ] {
                let count = try await StoredRows.integer(
                    "SELECT count(*) FROM \(table) WHERE \(column) = '\(owner)'", on: server.storage)
                #expect(count == 0, "\(table)")
            }
            #expect(try await StoredRows.integer(
                "SELECT count(*) FROM sessions WHERE user_name = 'jo@example.com'", on: server.storage) == 0)
            #expect(try await server.server.store.user(recordName: owner, container: TestServer.container) == nil)

            // Public records stay (the container's default); bob keeps everything.
            let publicRecords = try await server.anonymous().post(
                "records/lookup", ["records": [["recordName": "jo-public"], ["recordName": "bob-public"]]], scope: "public")
            #expect(publicRecords.records.map { $0["recordName"] } == ["jo-public", "bob-public"])
            #expect(try await bob.get("users/current").status == 200)

            // The address can sign up again: a new user with an empty private database.
            let (again, _) = try await server.signedUp("jo@example.com", outbox: outbox)
            #expect(again.userRecordName != nil && again.userRecordName != owner)
            let zones = try await again.get("zones/list")
            #expect(zones.zones.map { $0["zoneID"]?["zoneName"] } == ["_defaultZone"])
        }
    }

    @Test(arguments: Engine.available)
    func aContainerCanHaveTheirPublicRecordsDeletedToo(engine: Engine) async throws {
        let outbox = MailOutbox()
        try await TestServer.withSignIn(engine, outbox: outbox) { server in
            try await server.server.store.setSignInSettings(
                ContainerSignInSettings(passwords: true, redirectOrigins: [], deletePublicRecords: true),
                container: TestServer.container)
            let (kim, _) = try await server.signedUp("kim@example.com", outbox: outbox)
            let bob = try await server.user("bob")
            let mine = (0..<3).map { op("create", "kim-\($0)", fields: ["title": "k"]) }
            #expect(try await kim.modify("_defaultZone", mine, scope: "public").status == 200)
            #expect(try await bob.modify("_defaultZone", [op("create", "bob-public")], scope: "public").status == 200)

            let deleted = try await kim.post("accounts/delete", ["confirm": "DELETE"])
            #expect(deleted["publicRecordsDeleted"] == 3)
            let lookup = try await server.anonymous().post(
                "records/lookup", ["records": [["recordName": "kim-0"], ["recordName": "bob-public"]]], scope: "public")
            #expect(lookup.records.map { $0["serverErrorCode"]?.string } == ["NOT_FOUND", nil])
        }
    }
}
