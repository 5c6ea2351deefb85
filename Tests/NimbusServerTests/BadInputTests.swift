import NimbusProtocol
import NimbusTestSupport
import Testing

@Suite("Bad input gets a clear error, never a crash or a partial write")
struct BadInputTests {
    func expectBadRequest(_ reply: TestClient.Reply, mentioning words: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(reply.status == 400, sourceLocation: sourceLocation)
        #expect(reply.serverErrorCode == "BAD_REQUEST" || reply.serverErrorCode == "LIMIT_EXCEEDED", sourceLocation: sourceLocation)
        #expect(reply["uuid"]?.string?.isEmpty == false, sourceLocation: sourceLocation)
        let reason = reply["reason"]?.string ?? ""
        for word in words {
            #expect(reason.contains(word), "reason '\(reason)' should mention \(word)", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: Engine.available) func malformedBodiesAndWrongTypesAreBadRequestsNamingThePath(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            expectBadRequest(try await alice.postRaw("records/modify", "{\"operations\": [}"), mentioning: ["malformed JSON"])
            expectBadRequest(try await alice.postRaw("records/modify", "[1,2]"), mentioning: ["object"])
            expectBadRequest(try await alice.post("records/modify", ["operations": "nope"]), mentioning: ["operations"])
            expectBadRequest(
                try await alice.post("records/modify", ["zoneID": ["zoneName": "Z"], "operations": [["operationType": "explode", "record": [:]]]]),
                mentioning: ["operations[0].operationType", "explode"])
            expectBadRequest(
                try await alice.post(
                    "records/modify",
                    [
                        "zoneID": ["zoneName": "Z"],
                        "operations": [
                            op("create", "ok"),
                            [
                                "operationType": "create",
                                "record": ["recordName": "r", "recordType": "T", "fields": ["n": ["value": "x", "type": "INT64"]]],
                            ],
                        ],
                    ]),
                mentioning: ["operations[1].record.fields.n"])
            expectBadRequest(
                try await alice.post(
                    "records/modify",
                    [
                        "zoneID": ["zoneName": "Z"],
                        "operations": [
                            [
                                "operationType": "create",
                                "record": ["recordName": "r", "recordType": "T", "fields": ["n": ["value": 1, "type": "FLOAT128"]]],
                            ]
                        ],
                    ]),
                mentioning: ["FLOAT128"])
            expectBadRequest(
                try await alice.post(
                    "records/modify",
                    [
                        "zoneID": ["zoneName": "Z"],
                        "operations": [
                            [
                                "operationType": "create",
                                "record": ["recordName": "r", "recordType": "T", "fields": ["n": ["value": .number("9223372036854775808"), "type": "INT64"]]],
                            ]
                        ],
                    ]),
                mentioning: ["64-bit"])
            expectBadRequest(try await alice.post("records/changes", ["zoneID": ["zoneName": "Z"], "resultsLimit": 0]), mentioning: ["resultsLimit"])
            expectBadRequest(try await alice.post("records/changes", [:]), mentioning: ["zoneID"])

            // None of those wrote anything ("ok" came before the bad item of the same request).
            let lookup = try await alice.post("records/lookup", ["zoneID": ["zoneName": "Z"], "records": [["recordName": "ok"]]])
            #expect(lookup.records.first?["serverErrorCode"] == "NOT_FOUND")
            // And the server keeps serving.
            #expect(try await alice.get("zones/list").status == 200)
        }
    }

    /// CloudKit's limit per modify operation is 400 items: 400 in one atomic request are
    /// applied together, 401 are refused with LIMIT_EXCEEDED and nothing is written.
    @Test(arguments: Engine.available) func upTo400OperationsAreAppliedAndMoreAreRefused(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let tooMany = try await alice.modify("Z", (0..<401).map { op("create", "r\($0)") }, atomic: true)
            #expect(tooMany.status == 400)
            expectBadRequest(tooMany, mentioning: ["401", "400"])
            #expect(try await alice.changes("Z").records.isEmpty)

            let applied = try await alice.modify("Z", (0..<400).map { op("create", "r\($0)") }, atomic: true)
            #expect(applied.status == 200)
            #expect(applied.records.count == 400)
            #expect(applied.records.allSatisfy { $0["serverErrorCode"] == nil && $0["recordChangeTag"] != nil })
            #expect(try await alice.changes("Z").records.isEmpty == false)
        }
    }

    @Test(arguments: Engine.available) func aRecordOverOneMegabyteIsRefused(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let big = String(repeating: "x", count: (1 << 20) + 1)
            let reply = try await alice.modify("Z", [op("create", "small"), op("create", "big", fields: ["blob": .string(big)])])
            expectBadRequest(reply, mentioning: ["big", "1 MB"])
            #expect(try await alice.changes("Z").records.isEmpty)
        }
    }

    @Test(arguments: Engine.available) func unknownOperationsAndEnvironmentsAreClearErrors(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let unknown = try await alice.post("records/explode", [:])
            #expect(unknown.status == 404)
            #expect(unknown.serverErrorCode == "NOT_FOUND")
            var staging = alice
            staging.environment = "staging"
            let environment = try await staging.get("zones/list")
            #expect(environment.status == 400)
            #expect(environment["reason"]?.string?.contains("staging") == true)
        }
    }

    @Test(arguments: Engine.available) func commonClientVariationsAreTolerated(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            // Pretty-printed, odd content type, ownerName instead of ownerRecordName.
            let body = """
                {
                    "zoneID" : { "zoneName" : "Z", "ownerName" : "\(alice.userRecordName!)" },
                    "operations" : [
                        { "operationType" : "create",
                          "record" : { "recordName" : "pretty", "recordType" : "T", "fields" : { "a" : { "value" : "b" } } } }
                    ]
                }
                """
            let reply = try await alice.postRaw("records/modify", body, headers: [("Content-Type", "text/plain; charset=utf-8")])
            #expect(reply.status == 200)
            #expect(reply.records.first?["recordName"] == "pretty")
            // A record without recordName on create gets one.
            let unnamed = try await alice.post(
                "records/modify",
                ["zoneID": ["zoneName": "Z"], "operations": [["operationType": "create", "record": ["recordType": "T"]]]])
            #expect(unnamed.records.first?["recordName"]?.string?.isEmpty == false)
        }
    }
}
