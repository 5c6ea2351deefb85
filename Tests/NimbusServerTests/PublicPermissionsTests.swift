import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Per-record-type permissions in the public database, from the schema's grants: who reads,
/// creates and writes; ACCESS_DENIED with a reason naming the permission and who holds it.
@Suite("Public database permissions")
struct PublicPermissionsTests {
    static let schema = """
        DEFINE SCHEMA
            CREATE ROLE editors;
            RECORD TYPE Announcement ( title STRING, GRANT READ TO "_world" );
            RECORD TYPE Diary (
                "___recordID" REFERENCE QUERYABLE,
                text STRING,
                GRANT READ, WRITE TO "_creator",
                GRANT CREATE TO "_icloud"
            );
            RECORD TYPE Wiki ( "___recordID" REFERENCE QUERYABLE, text STRING, GRANT READ TO "_world", GRANT CREATE, WRITE TO "_icloud" );
            RECORD TYPE Roster ( "___recordID" REFERENCE QUERYABLE, text STRING, GRANT READ, CREATE TO "_icloud", GRANT WRITE TO "_creator" );
            RECORD TYPE Draft ( text STRING, GRANT READ, CREATE, WRITE TO editors );
        """

    /// Queries without filters need `___recordID QUERYABLE` in production, as in CloudKit.
    /// Deploys ``schema`` to production and returns production clients: Alice, Bob, anonymous.
    func production(_ server: TestServer) async throws -> (TestClient, TestClient, TestClient) {
        _ = try await SchemaDeployment.deploy(
            try SchemaFile.parse(Self.schema), container: TestServer.container, to: server.server.store)
        var alice = try await server.user("alice")
        var bob = try await server.user("bob")
        var anonymous = server.anonymous()
        alice.environment = "production"
        bob.environment = "production"
        anonymous.environment = "production"
        return (alice, bob, anonymous)
    }

    func lookup(_ client: TestClient, _ name: String) async throws -> JSON? {
        try await client.post("records/lookup", ["records": [["recordName": .string(name)]]], scope: "public").records
            .first
    }

    func save(_ client: TestClient, _ operation: JSON) async throws -> JSON? {
        try await client.modify("_defaultZone", [operation], scope: "public").records.first
    }

    @Test(arguments: Engine.available) func theDefaultsLetEveryoneReadUsersCreateAndCreatorsWrite(engine: Engine)
        async throws
    {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let created = try #require(try await save(alice, op("create", "a1", "Article", fields: ["n": 1])))
            let tag = try #require(created["recordChangeTag"]?.string)
            #expect(try await lookup(server.anonymous(), "a1")?["recordType"] == "Article")
            let denied = try #require(try await save(bob, op("update", "a1", "Article", fields: ["n": 2], tag: tag)))
            #expect(denied["serverErrorCode"] == "ACCESS_DENIED")
            #expect(
                denied["reason"]?.string
                    == "changing or deleting record 'a1' of type 'Article' in the public database needs WRITE, which the "
                    + "schema grants to _creator (the record's creator); this user holds none of them (a "
                    + "server-to-server key may do everything)")
            let deleteDenied = try await save(bob, op("forceDelete", "a1", "Article"))
            #expect(deleteDenied?["serverErrorCode"] == "ACCESS_DENIED")
            #expect(
                try await save(alice, op("update", "a1", "Article", fields: ["n": 2], tag: tag))?["fields"]?["n"]?[
                    "value"] == 2)
        }
    }

    @Test(arguments: Engine.available) func grantsDecideWhoCreatesAndWritesEachType(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let (alice, bob, _) = try await production(server)

            // Nobody but the admin creates announcements.
            let announcement = try #require(
                try await save(alice, op("create", "n1", "Announcement", fields: ["title": "Hi"])))
            #expect(announcement["serverErrorCode"] == "ACCESS_DENIED")
            #expect(
                announcement["reason"]?.string?.contains("needs CREATE, which the schema grants to no role") == true)

            // Signed-in users create and write any wiki page.
            let page = try #require(try await save(alice, op("create", "w1", "Wiki", fields: ["text": "v1"])))
            let tag = try #require(page["recordChangeTag"]?.string)
            #expect(
                try await save(bob, op("update", "w1", "Wiki", fields: ["text": "v2"], tag: tag))?["fields"]?["text"]?[
                    "value"] == "v2")

            // A role no user holds grants nothing.
            let draft = try #require(try await save(alice, op("create", "d1", "Draft", fields: ["text": "x"])))
            #expect(draft["serverErrorCode"] == "ACCESS_DENIED")
            #expect(draft["reason"]?.string?.contains("editors (no user holds it)") == true)

            // Diaries: created by any user, changed only by their creator.
            _ = try await save(alice, op("create", "diary-a", "Diary", fields: ["text": "dear diary"]))
            let bobWrites = try await save(bob, op("forceUpdate", "diary-a", "Diary", fields: ["text": "hacked"]))
            #expect(bobWrites?["serverErrorCode"] == "ACCESS_DENIED")
            #expect(
                try await save(alice, op("forceUpdate", "diary-a", "Diary", fields: ["text": "ok"]))?["fields"] != nil)
        }
    }

    @Test(arguments: Engine.available) func readsFollowTheGrants(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let (alice, bob, anonymous) = try await production(server)
            _ = try await save(alice, op("create", "diary-a", "Diary", fields: ["text": "alice's"]))
            _ = try await save(bob, op("create", "diary-b", "Diary", fields: ["text": "bob's"]))
            _ = try await save(alice, op("create", "roster", "Roster", fields: ["text": "members"]))
            _ = try await save(alice, op("create", "wiki", "Wiki", fields: ["text": "public"]))

            // Lookups: per record.
            #expect(try await lookup(alice, "diary-a")?["fields"]?["text"]?["value"] == "alice's")
            let bobReads = try #require(try await lookup(bob, "diary-a"))
            #expect(bobReads["serverErrorCode"] == "ACCESS_DENIED")
            #expect(bobReads["recordName"] == "diary-a")
            #expect(bobReads["reason"]?.string?.contains("reading record 'diary-a' of type 'Diary'") == true)
            #expect(try await lookup(anonymous, "diary-a")?["serverErrorCode"] == "ACCESS_DENIED")
            #expect(try await lookup(bob, "roster")?["recordType"] == "Roster")
            let outsider = try #require(try await lookup(anonymous, "roster"))
            #expect(outsider["serverErrorCode"] == "ACCESS_DENIED")
            #expect(outsider["reason"]?.string?.contains("a caller who is not signed in") == true)
            #expect(try await lookup(anonymous, "wiki")?["recordType"] == "Wiki")

            // Queries: a type read only by creators answers each caller's own records.
            func query(_ client: TestClient, _ type: String) async throws -> TestClient.Reply {
                try await client.post("records/query", ["query": ["recordType": .string(type)]], scope: "public")
            }
            #expect(try await query(bob, "Diary").records.compactMap { $0["recordName"]?.string } == ["diary-b"])
            #expect(try await query(alice, "Diary").records.compactMap { $0["recordName"]?.string } == ["diary-a"])
            let anonymousDiaries = try await query(anonymous, "Diary")
            #expect(anonymousDiaries.serverErrorCode == "ACCESS_DENIED")
            #expect(try await query(anonymous, "Roster").serverErrorCode == "ACCESS_DENIED")
            #expect(try await query(bob, "Roster").records.count == 1)
            #expect(try await query(anonymous, "Wiki").records.count == 1)

            // Change feeds leave out what the caller may not read.
            let feed = try await bob.post("records/changes", ["zoneID": ["zoneName": "_defaultZone"]], scope: "public")
            #expect(feed.status == 200, "\(feed.text)")
            let names = Set(feed.records.compactMap { $0["recordName"]?.string })
            #expect(names.isSuperset(of: ["diary-b", "roster", "wiki"]))
            #expect(!names.contains("diary-a"))
            let anonymousFeed = try await anonymous.post(
                "records/changes", ["zoneID": ["zoneName": "_defaultZone"]], scope: "public")
            #expect(Set(anonymousFeed.records.compactMap { $0["recordName"]?.string }) == ["wiki"])

            // Query subscriptions need READ on every record of the type.
            func subscribe(_ client: TestClient, _ type: String) async throws -> JSON? {
                try await client.post(
                    "subscriptions/modify",
                    [
                        "operations": [
                            [
                                "operationType": "create",
                                "subscription": [
                                    "subscriptionID": .string("s-\(type)"), "subscriptionType": "query",
                                    "query": ["recordType": .string(type)],
                                    "firesOn": ["create", "update", "delete"],
                                ],
                            ]
                        ]
                    ], scope: "public")["subscriptions"]?.array?.first ?? nil
            }
            let diarySubscription = try await alice.post(
                "subscriptions/modify",
                [
                    "operations": [
                        [
                            "operationType": "create",
                            "subscription": [
                                "subscriptionID": "s", "subscriptionType": "query", "query": ["recordType": "Diary"],
                                "firesOn": ["create"],
                            ],
                        ]
                    ]
                ], scope: "public")
            #expect(diarySubscription.serverErrorCode == "ACCESS_DENIED")
            #expect(try await subscribe(bob, "Wiki")?["subscriptionID"] == "s-Wiki")
        }
    }
}
