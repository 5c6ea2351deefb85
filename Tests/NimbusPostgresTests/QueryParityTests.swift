import Foundation
import NimbusProtocol
import NimbusStore
import Testing

@testable import NimbusPostgres

extension PostgresTests {
    /// Schemas, index entries and `records/query` plans answer on PostgreSQL as on SQLite:
    /// the same pages, markers and errors for the same script.
    @Suite("Query parity with SQLite")
    struct QueryParityTests {
        @Test func queriesAndSchemasAnswerAsSQLiteDoes() async throws {
            try await Parity.expectSameAnswers { try await QueryParityScript.run(on: $0) }
        }

        /// A schema change waits for writes in flight (and they for it): records written by
        /// other nodes while an index is added all end up in it.
        @Test func anIndexAddedWhileNodesWriteCoversEveryRecord() async throws {
            try await TestPostgres.withNodes(2) { stores in
                let database = DatabaseKey.privateDatabase(of: "_racer")
                var schema = ContainerSchema(recordTypes: ["Item": RecordTypeSchema(fields: ["n": FieldSchema(type: .int64)])])
                let version = try await stores[0].updateSchema(schema, container: "iCloud.test", environment: .development, expectedVersion: 0)
                schema.recordTypes["Item"]!.fields["n"]!.indexes = [.queryable]
                let indexed = schema
                // The index is created while the writers run: after their first batch commits.
                let (batches, committed) = AsyncStream<Void>.makeStream()
                let writers = Task {
                    defer { committed.finish() }
                    for batch in 0..<20 {
                        let operations = (0..<10).map { index in
                            Requests.operation(.create, Record(recordName: "r\(batch)-\(index)", recordType: "Item", fields: ["n": .int64(Int64(batch))]))
                        }
                        _ = try await stores[batch % 2].modifyRecords(
                            operations, zone: "_defaultZone", atomic: false, policy: Requests.policy(),
                            caller: Caller(userRecordName: "_racer"), in: database)
                        committed.yield()
                    }
                }
                var afterFirst = batches.makeAsyncIterator()
                _ = await afterFirst.next()
                _ = try await stores[1].updateSchema(indexed, container: "iCloud.test", environment: .development, expectedVersion: version)
                try await writers.value
                let plan = try QueryPlan(RecordQuery(recordType: "Item", filters: [QueryFilter(field: "n", .greaterThanOrEquals, 0)]), schema: indexed.recordTypes["Item"]!)
                var names: [String] = []
                var marker: String?
                repeat {
                    let page = try await QueryExecutor(store: stores[0]).run(plan, zone: nil, limit: 200, continuationMarker: marker, in: database)
                    names += page.hits.map(\.record.recordName)
                    marker = page.continuationMarker
                } while marker != nil
                #expect(names.count == 200)
                #expect(Set(names).count == 200)
            }
        }
    }
}

/// Schemas, writes and queries through the shared executor, one line per answer.
enum QueryParityScript {
    static let alice = DatabaseKey.privateDatabase(of: "_alice")
    static let caller = Caller(userRecordName: "_alice", deviceID: "phone")

    static func run(on store: any NimbusStorage) async throws -> [String] {
        var log: [String] = []
        func note(_ value: Any) { log.append(String(describing: value)) }
        typealias R = Requests

        note(try await store.schema(container: "iCloud.test", environment: .development))
        var schema = ContainerSchema(recordTypes: [
            "Place": RecordTypeSchema(
                fields: [
                    "name": FieldSchema(type: .string, indexes: [.queryable, .sortable, .searchable]),
                    "rank": FieldSchema(type: .int64, indexes: [.queryable, .sortable]),
                    "score": FieldSchema(type: .double, indexes: [.queryable, .sortable]),
                    "tags": FieldSchema(type: .stringList, indexes: [.queryable, .searchable]),
                    "spot": FieldSchema(type: .location, indexes: [.queryable, .sortable]),
                ],
                systemIndexes: [.recordName: [.queryable], .createdTimestamp: [.sortable]])
        ])
        let v1 = try await store.updateSchema(schema, container: "iCloud.test", environment: .development, expectedVersion: 0)
        note(v1)
        do {
            _ = try await store.updateSchema(schema, container: "iCloud.test", environment: .development, expectedVersion: 0)
        } catch { note("error: \(error)") }

        _ = try await store.modifyZones([.create(zoneName: "Z")], caller: caller, in: alice)
        var operations: [RecordOperation] = []
        for index in 0..<30 {
            var fields: [String: FieldValue] = [
                "name": .string(["Café", "Alpha", "beta", "Ünïcode", "zeta"][index % 5] + " \(index)"),
                "rank": .int64(Int64(index % 7)),
                "tags": .list(elementType: .string, index % 3 == 0 ? [] : [.string("t\(index % 4)"), .string("all")]),
            ]
            if index % 4 != 0 { fields["score"] = .double(Double(index) / 3) }
            if index % 2 == 0 { fields["spot"] = .location(Location(latitude: 37 + Double(index) / 100, longitude: -122)) }
            operations.append(R.operation(.create, Record(recordName: String(format: "p%02d", index), recordType: "Place", fields: fields)))
        }
        _ = try await store.modifyRecords(operations, zone: "Z", atomic: false, policy: R.policy(), caller: caller, in: alice)
        // Updates and deletes move and drop entries.
        _ = try await store.modifyRecords(
            [
                R.operation(.forceUpdate, Record(recordName: "p01", recordType: "Place", fields: ["rank": .int64(100), "name": .string("renamed one")])),
                R.operation(.forceDelete, Record(recordName: "p02", recordType: "Place")),
            ], zone: "Z", atomic: false, policy: R.policy(), caller: caller, in: alice)

        let queries: [RecordQuery] = [
            RecordQuery(recordType: "Place"),
            RecordQuery(recordType: "Place", filters: [QueryFilter(field: "rank", .equals, 3)]),
            RecordQuery(recordType: "Place", filters: [QueryFilter(field: "rank", .greaterThan, 2)], sorts: [QuerySort(.field("rank"), ascending: false)]),
            RecordQuery(recordType: "Place", sorts: [QuerySort(.field("score"))]),
            RecordQuery(recordType: "Place", sorts: [QuerySort(.field("name"), ascending: false)]),
            RecordQuery(recordType: "Place", filters: [QueryFilter(field: "name", .beginsWith, "Ü")]),
            RecordQuery(recordType: "Place", filters: [QueryFilter(field: "tags", .listContains, "t1")]),
            RecordQuery(recordType: "Place", filters: [QueryFilter(field: "rank", .in, .list(elementType: .int64, [1, 5]))]),
            RecordQuery(recordType: "Place", filters: [QueryFilter(field: "name", .containsAllTokens, "cafe 10")]),
            RecordQuery(recordType: "Place", filters: [QueryFilter(.searchableFields, .containsAnyTokens, "all zeta")]),
            RecordQuery(recordType: "Place", filters: [QueryFilter(field: "score", .lessThanOrEquals, 4.5)], sorts: [QuerySort(.field("score"), ascending: false)]),
            RecordQuery(recordType: "Place", filters: [QueryFilter(field: "spot", .near, .location(Location(latitude: 37.1, longitude: -122)), distance: 5_000)],
                sorts: [QuerySort(.field("spot"), relativeLocation: Location(latitude: 37.1, longitude: -122))]),
            RecordQuery(recordType: "Place", sorts: [QuerySort(.field("rank")), QuerySort(.system(.recordName), ascending: false)]),
            RecordQuery(recordType: "Place", filters: [QueryFilter(field: "rank", .notEquals, 0)], sorts: [QuerySort(.system(.createdTimestamp))]),
        ]
        for query in queries {
            let plan = try QueryPlan(query, schema: schema.recordTypes["Place"]!)
            var marker: String?
            var pages: [[String]] = []
            repeat {
                let page = try await QueryExecutor(store: store).run(plan, zone: "Z", limit: 4, continuationMarker: marker, in: alice)
                pages.append(page.hits.map { "\($0.zone)/\($0.record.recordName)" })
                marker = page.continuationMarker
            } while marker != nil && pages.count < 20
            note(pages)
        }

        // Removing an index drops its entries; adding one builds it over the existing records.
        schema.recordTypes["Place"]!.fields["rank"]!.indexes = []
        schema.recordTypes["Place"]!.fields["score"]!.indexes = [.queryable]
        let v2 = try await store.updateSchema(schema, container: "iCloud.test", environment: .development, expectedVersion: v1)
        note(v2)
        note(try await store.schema(container: "iCloud.test", environment: .development))
        note(try await store.scanIndex(IndexScan(recordType: "Place", zone: "Z", source: .values(index: "rank", range: .all), limit: 100), in: alice).count)
        note(try await store.scanIndex(IndexScan(recordType: "Place", zone: "Z", source: .values(index: "score", range: .all), limit: 100), in: alice).map(\.position))

        // Deleting the zone drops its entries.
        _ = try await store.modifyZones([.delete(zoneName: "Z")], caller: caller, in: alice)
        note(try await store.scanIndex(IndexScan(recordType: "Place", zone: nil, source: .values(index: "___recordID", range: .all), limit: 100), in: alice).count)
        note(try await store.scanIndex(IndexScan(recordType: "Place", zone: nil, source: .tokens(field: nil, tokens: ["all"], matchAll: true), limit: 100), in: alice).count)
        return log
    }
}
