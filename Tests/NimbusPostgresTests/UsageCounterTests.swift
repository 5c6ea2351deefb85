import NimbusProtocol
import NimbusStore
import PostgresNIO
import Testing

@testable import NimbusPostgres

extension PostgresTests {
    /// The usage counter on PostgreSQL: no update lost between nodes, filled by schema
    /// version 10, and right again after a node of an older release wrote.
    @Suite("Usage counter")
    struct UsageCounterTests {
        let database = DatabaseKey.privateDatabase(of: "_alice")
        let caller = Caller(userRecordName: "_alice")

        /// The raw columns of the database's row: the counter and the versions.
        func row(_ store: PostgresStore) async throws -> (usage: DatabaseUsage, version: Int64, usageVersion: Int64) {
            let rows = try await store.rows(
                """
                SELECT record_bytes, asset_bytes, version, usage_version FROM databases d WHERE \(database: database)
                """)
            let (records, assets, version, usageVersion) = try #require(rows.first).decode((Int64, Int64, Int64, Int64).self)
            return (DatabaseUsage(recordBytes: records, assetBytes: assets), version, usageVersion)
        }

        func save(_ store: PostgresStore, _ names: [String], text: String, type: RecordOperationType = .forceReplace)
            async throws
        {
            _ = try await store.modifyRecords(
                names.map { Requests.operation(type, Requests.record($0, fields: ["t": .string(text)])) }, zone: "Z",
                atomic: false, policy: Requests.policy(), caller: caller, in: database)
        }

        /// Eight writers on two nodes save and delete in one database at once: each adds its
        /// change under the database's row lock, so the counter ends equal to a recount.
        @Test func concurrentWritesOnTwoNodesLoseNoUpdate() async throws {
            try await TestPostgres.withNodes(2) { nodes in
                _ = try await nodes[0].modifyZones([.create(zoneName: "Z")], in: database)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<8 {
                        let node = nodes[writer % 2]
                        group.addTask {
                            for commit in 0..<25 {
                                let name = "w\(writer)-\(commit % 6)"
                                if commit % 5 == 4 {
                                    try await save(node, [name], text: "", type: .forceDelete)
                                } else {
                                    try await save(node, [name, "shared-\(commit % 3)"], text: String(repeating: "x", count: commit * 7))
                                }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                let (counted, version, usageVersion) = try await row(nodes[1])
                #expect(counted == (try await nodes[1].recountUsage(of: database)))
                #expect(counted.recordBytes > 0)
                #expect(usageVersion == version)
            }
        }

        /// Version 10 on the tables of version 9: each database's counter is filled from its rows.
        @Test func version10FillsTheCountersOfExistingDatabases() async throws {
            try await TestPostgres.withNodes { stores in
                let store = stores[0]
                _ = try await store.modifyZones([.create(zoneName: "Z")], in: database)
                try await save(store, ["a", "b"], text: "été")
                try await save(store, ["b"], text: "", type: .forceDelete)
                let expected = try await store.recountUsage(of: database)
                try await store.rows(
                    "ALTER TABLE databases DROP COLUMN record_bytes, DROP COLUMN asset_bytes, DROP COLUMN usage_version")
                let version10 = try #require(PostgresStore.migrations.first { $0.version == 10 })
                for statement in version10.statements { try await store.rows(PostgresQuery(unsafeSQL: statement)) }
                let (counted, version, usageVersion) = try await row(store)
                #expect(counted == expected)
                #expect(counted.recordBytes == Int64(#"{"t":{"value":"été","type":"STRING"}}"#.utf8.count))
                #expect(usageVersion == version)
            }
        }

        /// A node of an older release writes without keeping the counter: reads count the
        /// database again, and the next write of this release puts the counter right.
        @Test func aWriteByAnOlderNodeIsCountedAgainAtTheNextWrite() async throws {
            try await TestPostgres.withNodes { stores in
                let store = stores[0]
                _ = try await store.modifyZones([.create(zoneName: "Z")], in: database)
                try await save(store, ["a", "b"], text: "some text")
                // What an older node's delete of `a` leaves: a tombstone and a new version.
                try await store.rows(
                    """
                    WITH bumped AS (UPDATE databases d SET version = version + 1 WHERE \(database: database) RETURNING id, version)
                    UPDATE records r SET deleted = true, fields = '{}', version = bumped.version FROM bumped
                    WHERE r.db = bumped.id AND r.name = 'a'
                    """)
                let recount = try await store.recountUsage(of: database)
                #expect(try await row(store).usage != recount)
                #expect(try await store.usage(of: database) == recount)

                try await save(store, ["c"], text: "more")
                let (counted, version, usageVersion) = try await row(store)
                #expect(counted == (try await store.recountUsage(of: database)))
                #expect(usageVersion == version)

                // Zone writes keep it as well.
                _ = try await store.modifyZones([.create(zoneName: "Y"), .delete(zoneName: "Z")], in: database)
                let afterZones = try await row(store)
                #expect(afterZones.usage == .empty)
                #expect(afterZones.usageVersion == afterZones.version)
            }
        }
    }
}
