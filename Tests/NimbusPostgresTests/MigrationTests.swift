import NimbusStore
import PostgresNIO
import Testing

@testable import NimbusPostgres

extension PostgresTests {
    @Suite("Migrations")
    struct MigrationTests {
        func appliedVersions(_ store: PostgresStore) async throws -> [Int64] {
            try await store.rows("SELECT version::int8 FROM nimbus_schema_version ORDER BY version").map {
                try $0.decode(Int64.self)
            }
        }

        @Test func aFreshSchemaIsCreatedAndMigratedToTheNewestVersion() async throws {
            try await TestPostgres.withNodes { stores in
                let versions = try await appliedVersions(stores[0])
                #expect(versions == PostgresStore.migrations.map { Int64($0.version) })
                #expect(stores[0].engineName == "postgres")
                #expect(try await stores[0].listZones(in: .privateDatabase(of: "_alice")) == [ZoneState.defaultZone])
            }
        }

        @Test func reopeningIsIdempotent() async throws {
            try await TestPostgres.withNodes { stores in
                _ = try await stores[0].createContainer("iCloud.reopen")
                let again = try await TestPostgres.open(schema: stores[0].schema)
                let versions = try await appliedVersions(again)
                let containers = try await again.listContainers()
                try await again.shutdown()
                #expect(versions == PostgresStore.migrations.map { Int64($0.version) })
                #expect(containers == ["iCloud.reopen"])
            }
        }

        /// Version 7 on the tables of version 6: tokens a client registered without
        /// `tokens/create` (inserted registered, `registered_at = created_at`) go; issued ones stay.
        @Test func version7RemovesThePushTokensTheServerNeverIssued() async throws {
            try await TestPostgres.withNodes { stores in
                let store = stores[0]
                try await store.rows("DROP TABLE server_secrets")
                for (token, created, registered) in [("issued", 1, nil), ("issued-registered", 1, 5), ("made-up", 7, 7)] as [(String, Int64, Int64?)] {
                    try await store.rows(
                        """
                        INSERT INTO push_tokens (token, container, environment, recipient, apns_environment, created_at,
                            registered_at)
                        VALUES (\(token), 'c', 'development', '_alice', 'development', \(created), \(registered))
                        """)
                }
                let version7 = try #require(PostgresStore.migrations.first { $0.version == 7 })
                for statement in version7.statements { try await store.rows(PostgresQuery(unsafeSQL: statement)) }
                let left = try await store.rows("SELECT token FROM push_tokens ORDER BY token").map { try $0.decode(String.self) }
                #expect(left == ["issued", "issued-registered"])
            }
        }

        @Test func nodesStartingTogetherMigrateOnce() async throws {
            let schema = TestPostgres.freshSchema()
            let stores = try await withThrowingTaskGroup(of: PostgresStore.self) { group in
                for _ in 0..<4 { group.addTask { try await TestPostgres.open(schema: schema) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(try await appliedVersions(stores[0]) == PostgresStore.migrations.map { Int64($0.version) })
            try await TestPostgres.close(stores, dropping: schema)
        }

        @Test func aNewerSchemaRefusesToOpen() async throws {
            try await TestPostgres.withNodes { stores in
                let newer = PostgresStore.newestSchemaVersion + 1
                try await stores[0].rows("INSERT INTO nimbus_schema_version VALUES (\(newer), 0)")
                do {
                    let store = try await TestPostgres.open(schema: stores[0].schema)
                    try await store.shutdown()
                    Issue.record("a schema at version \(newer) opened")
                } catch let error as PostgresStoreError {
                    #expect(error.code == .schemaTooNew)
                    #expect(
                        error.message
                            == "the database schema is at version \(newer) but this nimbus knows versions up to "
                            + "\(newer - 1): upgrade nimbus on this node (or point it at another database)")
                }
            }
        }

        @Test func badURLsAndSchemaNamesAreRefused() async throws {
            await #expect(throws: PostgresStoreError.self) {
                _ = try await PostgresStore.open(url: "mysql://x@y/z", logger: TestPostgres.logger)
            }
            await #expect(throws: PostgresStoreError.self) {
                _ = try await PostgresStore.open(
                    url: TestPostgres.url ?? "", schema: "drop table; --", logger: TestPostgres.logger)
            }
        }

        @Test func aLongSchemaNameGetsAValidChannel() {
            let long = String(repeating: "s", count: 63)
            let channel = PostgresStore.channelName(schema: long)
            #expect(channel.utf8.count <= 63)
            #expect(channel != PostgresStore.channelName(schema: String(repeating: "s", count: 62) + "t"))
            #expect(PostgresStore.channelName(schema: "public") == "nimbus_public")

            let accounts = PostgresStore.accountsChannelName(schema: long)
            #expect(accounts.utf8.count <= 63)
            #expect(accounts != PostgresStore.accountsChannelName(schema: String(repeating: "s", count: 62) + "t"))
            #expect(accounts != channel)
            #expect(PostgresStore.accountsChannelName(schema: "public") == "nimbus_accounts_public")
        }
    }
}
