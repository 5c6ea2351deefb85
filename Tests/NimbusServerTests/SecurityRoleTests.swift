import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Custom security roles: an operator grants a schema's `CREATE ROLE` role to users per
/// environment (``RoleAssignments``, what `nimbus role` and the dashboard call), and the
/// public database's `GRANT … TO role` permissions follow at once, through the CloudKit API.
@Suite("Security roles")
struct SecurityRoleTests {
    static let schema = """
        DEFINE SCHEMA
            CREATE ROLE editors;
            CREATE ROLE "night shift";
            RECORD TYPE Draft (
                "___recordID" REFERENCE QUERYABLE,
                text STRING,
                GRANT READ, CREATE, WRITE TO editors
            );
        """
    static let c = TestServer.container

    func lookup(_ client: TestClient, _ name: String) async throws -> JSON? {
        try await client.post("records/lookup", ["records": [["recordName": .string(name)]]], scope: "public").records
            .first
    }

    func save(_ client: TestClient, _ operation: JSON) async throws -> JSON? {
        try await client.modify("_defaultZone", [operation], scope: "public").records.first
    }

    func set(_ granted: Bool, _ role: String, _ client: TestClient, _ environment: ContainerEnvironment, _ server: TestServer)
        async throws -> Bool
    {
        try await RoleAssignments.set(
            granted, role: role, userRecordName: try #require(client.userRecordName), container: Self.c,
            environment: environment, in: server.server.store)
    }

    @Test(arguments: Engine.available) func grantingARoleOpensItsRecordTypesAndRevokingClosesThem(engine: Engine)
        async throws
    {
        try await TestServer.with(engine) { server in
            _ = try await server.server.store.updateSchema(
                try SchemaFile.parse(Self.schema), container: Self.c, environment: .development, expectedVersion: 0)
            _ = try await SchemaDeployment.deploy(nil, container: Self.c, to: server.server.store)
            var alice = try await server.user("alice")
            var bob = try await server.user("bob")
            alice.environment = "production"
            bob.environment = "production"

            let refused = try #require(try await save(alice, op("create", "d1", "Draft", fields: ["text": "v1"])))
            #expect(refused["serverErrorCode"] == "ACCESS_DENIED")
            #expect(refused["reason"]?.string?.contains("editors (no user holds it)") == true)

            // Roles are held per environment: a development grant opens nothing in production.
            #expect(try await set(true, "editors", alice, .development, server))
            #expect(try await save(alice, op("create", "d1", "Draft", fields: ["text": "v1"]))?["serverErrorCode"] == "ACCESS_DENIED")

            #expect(try await set(true, "editors", alice, .production, server))
            #expect(try await set(true, "editors", alice, .production, server) == false)
            let created = try #require(try await save(alice, op("create", "d1", "Draft", fields: ["text": "v1"])))
            #expect(created["serverErrorCode"] == nil, "\(created)")
            let tag = try #require(created["recordChangeTag"]?.string)
            #expect(try await lookup(alice, "d1")?["fields"]?["text"]?["value"] == "v1")
            let query = try await alice.post("records/query", ["query": ["recordType": "Draft"]], scope: "public")
            #expect(query.records.compactMap { $0["recordName"]?.string } == ["d1"])

            let outsider = try #require(try await lookup(bob, "d1"))
            #expect(outsider["serverErrorCode"] == "ACCESS_DENIED")
            #expect(outsider["reason"]?.string?.contains("editors (the users an operator granted it to)") == true)
            #expect(try await save(bob, op("forceUpdate", "d1", "Draft", fields: ["text": "bob"]))?["serverErrorCode"] == "ACCESS_DENIED")

            // Revoked: refused again, on the next write and read.
            #expect(try await set(false, "editors", alice, .production, server))
            let afterRevoke = try #require(try await save(alice, op("update", "d1", "Draft", fields: ["text": "v2"], tag: tag)))
            #expect(afterRevoke["serverErrorCode"] == "ACCESS_DENIED")
            #expect(try await lookup(alice, "d1")?["serverErrorCode"] == "ACCESS_DENIED")
            #expect(try await alice.post("records/query", ["query": ["recordType": "Draft"]], scope: "public").serverErrorCode == "ACCESS_DENIED")
            #expect(try await set(false, "editors", alice, .production, server) == false)
        }
    }

    @Test(arguments: Engine.available) func onlyDeclaredRolesAreGrantedAndSchemasNeverCarryHolders(engine: Engine)
        async throws
    {
        try await TestServer.with(engine) { server in
            let store = server.server.store
            _ = try await SchemaDeployment.deploy(try SchemaFile.parse(Self.schema), container: Self.c, to: store)
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")

            // Undeclared and built-in roles are refused with the reason.
            await #expect(throws: CloudKitError.self) { try await set(true, "admins", alice, .production, server) }
            do {
                _ = try await set(true, "_icloud", alice, .production, server)
                Issue.record("a built-in role was granted")
            } catch let error as CloudKitError {
                #expect(error.code == .badRequest)
                #expect(error.reason.contains("built-in role"))
            }
            // The development schema has no roles until something declares them there.
            await #expect(throws: CloudKitError.self) { try await set(true, "editors", alice, .development, server) }

            #expect(try await set(true, "night shift", alice, .production, server))
            #expect(try await set(true, "editors", bob, .production, server))
            let production = try await store.schema(container: Self.c, environment: .production).schema
            #expect(production.roleMembers == ["night shift": [alice.userRecordName!], "editors": [bob.userRecordName!]])
            #expect(RoleAssignments.roles(of: alice.userRecordName!, in: production) == ["night shift"])

            // Exports are CloudKit's schema language: no holders.
            let export = try await SchemaDeployment.export(container: Self.c, environment: .production, from: store)
            #expect(!export.contains("TO USER"))
            #expect(export.contains("CREATE ROLE \"night shift\""))

            // A deployed file naming holders changes nobody's roles: production keeps its own.
            let sneaky = Self.schema + "\n    GRANT ROLE editors TO USER \"\(alice.userRecordName!)\";\n"
            _ = try await SchemaDeployment.deploy(try SchemaFile.parse(sneaky), container: Self.c, to: store)
            let after = try await store.schema(container: Self.c, environment: .production).schema
            #expect(after.roleMembers == production.roleMembers)

            // A development save that extends the schema keeps who holds a role there.
            _ = try await store.updateSchema(
                try SchemaFile.parse(Self.schema), container: Self.c, environment: .development,
                expectedVersion: try await store.schemaVersion(container: Self.c, environment: .development))
            #expect(try await set(true, "editors", alice, .development, server))
            _ = try await save(bob, op("create", "n1", "Note", fields: ["text": "new type"]))
            let development = try await store.schema(container: Self.c, environment: .development).schema
            #expect(development.recordTypes["Note"] != nil)
            #expect(development.roleMembers["editors"] == [alice.userRecordName!])
        }
    }
}
