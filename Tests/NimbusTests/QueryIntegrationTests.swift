import Foundation
import Nimbus
import Testing

/// The SDK's queries against a real server: `records(matching:)`, cursors and `QueryOperation`.
@Suite("Queries against a real server")
struct QueryIntegrationTests {
    let readingList = ZoneID(zoneName: "ReadingList")

    func seed(_ database: Database) async throws {
        try await database.save(RecordZone(zoneID: readingList))
        let titles = ["Swift on the server", "Swift concurrency", "Sync is hard", "Swift testing", "Postgres tips"]
        for (index, title) in titles.enumerated() {
            var bookmark = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "b\(index)", zoneID: readingList))
            bookmark["title"] = title
            bookmark["addedAt"] = Date(timeIntervalSince1970: 1_700_000_000 + Double(index) * 60)
            bookmark["read"] = index % 2 == 0
            bookmark["tags"] = index < 3 ? ["swift"] : ["db"]
            try await database.save(bookmark)
        }
    }

    @Test func queriesFilterSortAndContinueFromTheirCursor() async throws {
        try await LiveServer.with { server in
            let database = try await server.container(user: "ana").privateCloudDatabase
            try await seed(database)
            let query = Query(
                recordType: "Bookmark", filters: [.beginsWith("title", "Swift")], sortDescriptors: [.descending("addedAt")])
            let first = try await database.records(matching: query, inZoneWith: readingList, resultsLimit: 2)
            #expect(first.matchResults.map(\.0.recordName) == ["b3", "b1"])
            #expect(first.matchResults.allSatisfy { (try? $0.1.get())?.recordType == "Bookmark" })
            #expect(first.matchResults.first?.0.zoneID == readingList)
            let cursor = try #require(first.queryCursor)
            let rest = try await database.records(continuingMatchFrom: cursor, resultsLimit: 2)
            #expect(rest.matchResults.map(\.0.recordName) == ["b0"])
            #expect(rest.queryCursor == nil)

            let unread = try await database.records(
                matching: Query(
                    recordType: "Bookmark",
                    filters: [.equals("read", false), .greaterThan("addedAt", Date(timeIntervalSince1970: 1_700_000_000))]),
                inZoneWith: readingList, desiredKeys: ["title"])
            #expect(unread.matchResults.map(\.0.recordName) == ["b1", "b3"])
            let record = try #require(try unread.matchResults.first?.1.get())
            #expect(record["title"] == "Swift concurrency")
            #expect(record["read"] as Bool? == nil)
        }
    }

    @Test func aQueryOperationWithoutAZoneSearchesEveryZone() async throws {
        try await LiveServer.with { server in
            let database = try await server.container(user: "ana").privateCloudDatabase
            try await seed(database)
            var other = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "d1"))
            other["title"] = "Swift in the default zone"
            other["tags"] = ["swift"]
            try await database.save(other)

            let operation = QueryOperation(query: Query(recordType: "Bookmark", filters: [.listContains("tags", "swift")]))
            operation.database = database
            let log = EventLog()
            operation.recordMatchedBlock = { id, result in
                log.append("\(id.zoneID.zoneName)/\(id.recordName) \((try? result.get())?.recordType ?? "failed")")
            }
            operation.queryResultBlock = { result in log.append((try? result.get()) == .some(nil) ? "done" : "failed") }
            OperationQueue().addOperation(operation)
            try await log.wait(forCount: 5)
            #expect(log.events == [
                "ReadingList/b0 Bookmark", "ReadingList/b1 Bookmark", "ReadingList/b2 Bookmark",
                "_defaultZone/d1 Bookmark", "done",
            ])

            // The server's errors come through typed.
            let error = try await #require(throws: NimbusError.self) {
                _ = try await database.records(
                    matching: Query(recordType: "Bookmark", filters: [.lessThan("pages", 3)]), inZoneWith: readingList)
            }
            #expect(error.code == .invalidArguments)
            #expect(error.message.contains("no field 'pages'"))
        }
    }
}
