import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// The user record: one per user and container, of type `Users`, named by the user record
/// name, in the public database and in the user's private database.
@Suite("User records")
struct UserRecordTests {
    @Test(arguments: Engine.available) func everyUserHasARecordInThePublicAndTheirPrivateDatabase(engine: Engine)
        async throws
    {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let aliceName = try #require(alice.userRecordName)
            func lookup(_ client: TestClient, _ name: String, _ scope: String) async throws -> JSON? {
                try await client.post("records/lookup", ["records": [["recordName": .string(name)]]], scope: scope)
                    .records.first
            }
            for scope in ["private", "public"] {
                #expect(try await alice.get("users/current", scope: scope)["userRecordName"] == .string(aliceName))
                let record = try #require(try await lookup(alice, aliceName, scope))
                #expect(record["recordType"] == "Users", "\(scope)")
                #expect(record["recordName"] == .string(aliceName))
                #expect(record["created"]?["userRecordName"] == .string(aliceName), "the user creates their own record")
                #expect(record["recordChangeTag"]?.string != nil)
                let again = try #require(try await lookup(alice, aliceName, scope))
                #expect(again["recordChangeTag"] == record["recordChangeTag"], "created once")
            }
            // Anyone reads a user's public record; nobody else's private database holds it.
            #expect(try await lookup(bob, aliceName, "public")?["recordType"] == "Users")
            #expect(try await lookup(server.anonymous(), aliceName, "public")?["recordType"] == "Users")
            #expect(try await lookup(bob, aliceName, "private")?["serverErrorCode"] == "NOT_FOUND")
            #expect(try await lookup(bob, "_nobody", "public")?["serverErrorCode"] == "NOT_FOUND")
            // Only the default zone holds user records.
            _ = try await alice.createZone("Notes")
            let inZone = try await alice.post(
                "records/lookup", ["zoneID": ["zoneName": "Notes"], "records": [["recordName": .string(aliceName)]]])
            #expect(inZone.records.first?["serverErrorCode"] == "NOT_FOUND")
        }
    }

    @Test(arguments: Engine.available) func onlyItsUserUpdatesAUserRecordWhichIsNeverClaimedDeletedOrRetyped(
        engine: Engine
    ) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let aliceName = try #require(alice.userRecordName)

            // Bob can't claim Alice's record name before she ever used it: it is hers already.
            let squat = try await bob.modify("_defaultZone", [op("create", aliceName, "Users")], scope: "public")
            #expect(squat.records.first?["serverErrorCode"] == "ACCESS_DENIED")
            let twice = try await alice.modify("_defaultZone", [op("create", aliceName, "Users")], scope: "public")
            #expect(twice.records.first?["serverErrorCode"] == "EXISTS")
            let record = try await alice.post(
                "records/lookup", ["records": [["recordName": .string(aliceName)]]], scope: "public")
            #expect(record.records.first?["created"]?["userRecordName"] == .string(aliceName))
            let tag = try #require(record.records.first?["recordChangeTag"]?.string)

            let bobEdit = try await bob.modify(
                "_defaultZone", [op("update", aliceName, "Users", fields: ["nickname": "al"], tag: tag)],
                scope: "public")
            #expect(bobEdit.records.first?["serverErrorCode"] == "ACCESS_DENIED")
            let aliceEdit = try await alice.modify(
                "_defaultZone", [op("update", aliceName, "Users", fields: ["nickname": "Al"], tag: tag)],
                scope: "public")
            #expect(aliceEdit.records.first?["fields"]?["nickname"]?["value"] == "Al")

            let delete = try await alice.modify(
                "_defaultZone", [op("forceDelete", aliceName, "Users")], scope: "public")
            #expect(delete.status == 400)
            #expect(delete["reason"]?.string?.contains("can't be deleted") == true)
            let retype = try await alice.modify(
                "_defaultZone", [op("forceUpdate", aliceName, "Profile", fields: ["x": 1])], scope: "public")
            #expect(retype.status == 400)
            #expect(retype["reason"]?.string?.contains("its type is Users") == true)

            // A first write to the private user record finds it there.
            let privateEdit = try await alice.modify(
                "_defaultZone", [op("forceUpdate", aliceName, "Users", fields: ["theme": "dark"])])
            #expect(privateEdit.records.first?["fields"]?["theme"]?["value"] == "dark")
            #expect(privateEdit.records.first?["created"]?["userRecordName"] == .string(aliceName))
            let privateDelete = try await alice.modify("_defaultZone", [op("forceDelete", aliceName)])
            #expect(privateDelete.status == 400)
        }
    }
}
