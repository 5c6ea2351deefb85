import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NimbusEngines
import NimbusProtocol
import NimbusServer
import NimbusStore

/// `nimbus-bench query`: `records/query` latency over HTTP on a large record type.
///
/// Starts an embedded server on a fresh data directory, saves `--records` articles of one
/// type through `records/modify`, then times the first page (200 records) of three queries,
/// each `--samples` times one after another, from sending the request to having parsed the
/// answer and checked its records:
///
/// - EQUALS on an indexed STRING field (1 record in 50 matches);
/// - a range on an indexed INT64 field, sorted by that field;
/// - a CONTAINS_ALL_TOKENS search of two words in a text field (1 record in 20 matches).
///
/// The indexes are created just in time by each query's first run (the development
/// environment); that first run, which builds the index over every record, is reported apart.
struct QueryBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Measure records/query latency on a large record type (build with -c release).")

    @Option(name: .long, help: "Records of the queried type.")
    var records = 100_000
    @Option(name: .long, help: "Timed runs of each query (after its first, index-building run).")
    var samples = 200
    @Option(name: .long, help: "Data directory for the embedded server (must not exist yet).")
    var data: String?
    @Flag(name: .long, help: "Keep the data directory.")
    var keepData = false
    // Not `--json`: `nimbus-bench`'s own flag of that name would take it.
    @Flag(name: .customLong("json-output"), help: "Print the results as JSON.")
    var json = false

    static let categories = 50
    static let topics = ["swift", "server", "sync", "queries", "indexes", "cloud", "devices", "conflicts", "push", "schema"]
    static let words = ["notes", "guide", "deep", "dive", "practical", "tips", "review", "primer", "story", "lessons"]

    func validate() throws {
        guard records >= 1_000 else { throw ValidationError("--records must be at least 1000") }
        guard samples >= 1 else { throw ValidationError("--samples must be positive") }
    }

    func run() async throws {
        #if DEBUG
        FileHandle.standardError.write(Data("warning: this is a debug build; measure with `swift build -c release`\n".utf8))
        #endif
        let runID = String(UUID().uuidString.prefix(8)).lowercased()
        let directory = data ?? FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-bench-query-\(runID)").path
        guard !FileManager.default.fileExists(atPath: directory) else {
            throw ValidationError("\(directory) exists; the bench runs on a fresh data directory")
        }
        var logger = Logger(label: "nimbus")
        logger.logLevel = .warning
        let server = try await RunningServer.start(ServerConfiguration(port: 0, dataDirectory: directory), logger: logger)
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let results: [QueryBenchResult]
        let loadSeconds: Double
        do {
            let credentials = try await BenchCommand.provision(server.store, runID: runID)
            let client = BenchClient(http: http, baseURL: server.baseURL, credentials: credentials)
            let start = ContinuousClock.now
            try await load(client)
            loadSeconds = (ContinuousClock.now - start).seconds
            results = try await measure(client)
        } catch {
            try? await http.shutdown()
            try? await server.stop()
            throw error
        }
        try await http.shutdown()
        try await server.stop()
        if !keepData { try? FileManager.default.removeItem(atPath: directory) }

        let machine = MachineInfo.current()
        if json {
            print(
                JSON.object([
                    "machine": machine.json, "records": .int(records), "loadSeconds": .double(loadSeconds),
                    "results": .array(results.map(\.json)),
                ]).serialized())
        } else {
            var lines = [
                "Nimbus bench query — \(machine.summary)",
                "\(records) records of one type saved in \(String(format: "%.1f", loadSeconds)) s; "
                    + "load average at the end: \(machine.loadAverage)", "",
                "query (first page of 200)                        first run ms    p50 ms    p99 ms    max ms  target",
            ]
            for result in results { lines.append(result.line) }
            print(lines.joined(separator: "\n"))
        }
        fflush(nil)
        if results.contains(where: { $0.failures > 0 }) { throw ExitCode(2) }
    }

    /// Saves the articles in `records/modify` requests of 200.
    func load(_ client: BenchClient) async throws {
        for start in stride(from: 0, to: records, by: 200) {
            var body: [UInt8] = Array(#"{"operations":["#.utf8)
            for index in start..<min(start + 200, records) {
                if index != start { body.append(UInt8(ascii: ",")) }
                let topic = Self.topics[index % Self.topics.count]
                let word = Self.words[(index / Self.topics.count) % Self.words.count]
                body.append(contentsOf: #"{"operationType":"create","record":{"recordName":"a"#.utf8)
                body.append(contentsOf: String(format: "%07d", index).utf8)
                body.append(contentsOf: #"","recordType":"Article","fields":{"title":{"value":"#.utf8)
                JSON.writeString("Article \(index): \(topic) \(word)", into: &body)
                body.append(contentsOf: #","type":"STRING"},"category":{"value":"#.utf8)
                JSON.writeString("c\(index % Self.categories)", into: &body)
                body.append(contentsOf: #","type":"STRING"},"order":{"value":"#.utf8)
                body.append(contentsOf: String(index).utf8)
                body.append(contentsOf: #","type":"INT64"},"body":{"value":"#.utf8)
                JSON.writeString(
                    "A \(word) about \(topic), with a few more words to index: item \(index) of the feed.", into: &body)
                body.append(contentsOf: #","type":"STRING"}}}}"#.utf8)
            }
            body.append(contentsOf: "]}".utf8)
            let (status, json) = try await client.post("records/modify", body)
            guard status == 200, json["records"]?.array?.allSatisfy({ $0["serverErrorCode"] == nil }) == true else {
                throw BenchError("saving articles failed (\(status)): \(json.serialized().prefix(500))")
            }
        }
    }

    func measure(_ client: BenchClient) async throws -> [QueryBenchResult] {
        let middle = records / 2
        let queries: [(name: String, target: Double, query: JSON, check: @Sendable (JSON) -> String?)] = [
            (
                "EQUALS on an indexed field", 20,
                ["recordType": "Article", "filterBy": [["comparator": "EQUALS", "fieldName": "category", "fieldValue": ["value": "c7"]]]],
                { record in record["fields"]?["category"]?["value"] == "c7" ? nil : "category is not c7" }
            ),
            (
                "range, sorted by the indexed field", 20,
                [
                    "recordType": "Article",
                    "filterBy": [["comparator": "GREATER_THAN", "fieldName": "order", "fieldValue": ["value": .int(middle)]]],
                    "sortBy": [["fieldName": "order", "ascending": true]],
                ],
                { record in (record["fields"]?["order"]?["value"]?.int64 ?? 0) > middle ? nil : "order not above \(middle)" }
            ),
            (
                "CONTAINS_ALL_TOKENS, two words", 50,
                [
                    "recordType": "Article",
                    "filterBy": [["comparator": "CONTAINS_ALL_TOKENS", "fieldName": "body", "fieldValue": ["value": "sync lessons"]]],
                ],
                { record in
                    let text = record["fields"]?["body"]?["value"]?.string ?? ""
                    return text.contains("sync") && text.contains("lessons") ? nil : "body lacks the tokens"
                }
            ),
        ]
        var results: [QueryBenchResult] = []
        for (name, target, query, check) in queries {
            let body = JSON.object(["query": query, "resultsLimit": 200]).serializedBytes()
            var result = QueryBenchResult(name: name, target: target)
            let first = try await timed(client, body, check: check)
            result.firstRun = first.millis
            result.record(first.problem)
            var latencies: [Double] = []
            for _ in 0..<samples {
                let run = try await timed(client, body, check: check)
                latencies.append(run.millis)
                result.record(run.problem)
            }
            latencies.sort()
            result.p50 = latencies[latencies.count / 2]
            result.p99 = latencies[min(latencies.count - 1, Int((0.99 * Double(latencies.count)).rounded(.up)) - 1)]
            result.max = latencies.last!
            results.append(result)
        }
        return results
    }

    /// One query: milliseconds from sending to having parsed and checked the answer.
    func timed(_ client: BenchClient, _ body: [UInt8], check: (JSON) -> String?) async throws
        -> (millis: Double, problem: String?)
    {
        let start = ContinuousClock.now
        let (status, json) = try await client.post("records/query", body)
        var problem: String?
        if status != 200 {
            problem = "HTTP \(status): \(json.serialized().prefix(300))"
        } else if let records = json["records"]?.array {
            if records.count != 200 { problem = "\(records.count) records instead of 200" }
            for record in records {
                if let issue = check(record) { problem = issue }
            }
        } else {
            problem = "no records in the answer"
        }
        return ((ContinuousClock.now - start).seconds * 1000, problem)
    }
}

struct QueryBenchResult: Sendable {
    var name: String
    var target: Double
    var firstRun = 0.0
    var p50 = 0.0
    var p99 = 0.0
    var max = 0.0
    var failures = 0
    var firstProblem: String?

    mutating func record(_ problem: String?) {
        guard let problem else { return }
        failures += 1
        if firstProblem == nil { firstProblem = problem }
    }

    var verdict: String {
        failures > 0 ? "FAILED: \(firstProblem ?? "")" : "p50 ≤ \(Int(target)) ms: \(p50 <= target ? "met" : "MISSED")"
    }

    var line: String {
        func number(_ value: Double) -> String { BenchResult.pad(String(format: "%.2f", value), 10, right: true) }
        return BenchResult.pad(name, 48) + BenchResult.pad(String(format: "%.0f", firstRun), 13, right: true) + number(p50) + number(p99)
            + number(max) + "  " + verdict
    }

    var json: JSON {
        var members: [String: JSON] = [
            "name": .string(name), "targetMillis": .double(target), "firstRunMillis": .double(firstRun),
            "p50Millis": .double(p50), "p99Millis": .double(p99), "maxMillis": .double(max), "failures": .int(failures),
            "verdict": .string(verdict),
        ]
        if let firstProblem { members["firstProblem"] = .string(firstProblem) }
        return .object(members)
    }
}
