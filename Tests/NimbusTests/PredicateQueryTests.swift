import Foundation
import Nimbus
import NimbusServer
import Testing

/// Predicate format strings run as `records/query` against a real server: what the parser
/// compiles is what the server's evaluator and indexes answer.
@Suite("Predicate queries against a real server")
struct PredicateQueryTests {
    @Test func predicateFormsFindTheRecordsTheySay() async throws {
        try await LiveServer.with { server in
            let database = try await server.container(user: "ada").publicCloudDatabase
            let berlin = Location(latitude: 52.52, longitude: 13.405)
            let potsdam = Location(latitude: 52.3906, longitude: 13.0645)
            let articles: [(String, Int, Bool, [String], Location)] = [
                ("Swift on the server", 40, false, ["swift", "server"], berlin),
                ("Sync is hard", 41, true, ["sync"], potsdam),
                ("Swift concurrency in practice", 42, false, ["swift"], potsdam),
                ("CloudKit queries", 43, false, ["cloudkit", "sync"], berlin),
            ]
            for (index, article) in articles.enumerated() {
                var record = Record(recordType: "Article", recordID: Record.ID(recordName: "a\(index)"))
                record["title"] = article.0
                record["order"] = article.1
                record["read"] = article.2
                record["tags"] = article.3
                record["location"] = article.4
                _ = try await database.save(record)
            }
            func titles(_ format: String, _ arguments: any PredicateArgument...) async throws -> [String] {
                let predicate = try Query.Predicate(format: format, argumentArray: arguments)
                let query = Query(recordType: "Article", predicate: predicate, sortDescriptors: [.ascending("order")])
                return try await database.records(matching: query).matchResults.map { try $0.1.get()["title"] ?? "" }
            }
            #expect(
                try await titles("order > %d AND read == NO", 40) == [
                    "Swift concurrency in practice", "CloudKit queries",
                ])
            #expect(try await titles("title BEGINSWITH %@", "Swift").count == 2)
            #expect(
                try await titles("ANY tags IN %@", ["server", "cloudkit"]) == [
                    "Swift on the server", "CloudKit queries",
                ])
            #expect(try await titles("tags CONTAINS %@", "sync") == ["Sync is hard", "CloudKit queries"])
            #expect(try await titles("NOT (tags CONTAINS %@)", "swift") == ["Sync is hard", "CloudKit queries"])
            #expect(try await titles("self CONTAINS %@", "swift practice") == ["Swift concurrency in practice"])
            #expect(
                try await titles("distanceToLocation:fromLocation:(location, %@) < %f", berlin, 10_000.0)
                    == ["Swift on the server", "CloudKit queries"])
            #expect(
                try await titles("order BETWEEN {41, 42} AND NOT (title IN %@)", ["Sync is hard"]) == [
                    "Swift concurrency in practice"
                ])
            #expect(try await titles("TRUEPREDICATE").count == 4)
        }
    }
}
