import NimbusProtocol
import NimbusTestSupport
import Testing

/// Field values saved without `type` (Apple documents it as optional): where the schema knows
/// the field they take its type; only a new field's type is guessed from the value.
@Suite("Untyped values")
struct UntypedValueTests {
    /// The schema's fields, from one typed save.
    static func defineDoc(_ client: TestClient) async throws {
        let typed = try await client.modify(
            "_defaultZone",
            [
                typedOp(
                    "create", "typed", "Doc",
                    [
                        "data": ("AAE=", "BYTES"), "chunks": (["AAE="], "BYTES_LIST"), "when": (1, "TIMESTAMP"),
                        "stamps": ([1], "TIMESTAMP_LIST"), "title": ("t", "STRING"),
                    ])
            ])
        #expect(typed.records.first?["serverErrorCode"] == nil, "\(typed.text)")
    }

    /// Saves `fields` (JSON text of the `fields` object, as a client wrote it) on a new Doc.
    static func save(_ client: TestClient, _ name: String, fields: String) async throws -> TestClient.Reply {
        try await client.postRaw(
            "records/modify",
            #"{"zoneID":{"zoneName":"_defaultZone"},"operations":[{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Doc","fields":\#(fields)}}]}"#)
    }

    @Test(arguments: Engine.available) func untypedValuesOfKnownFieldsTakeTheSchemasType(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            try await Self.defineDoc(alice)
            // As CloudKit JS writes them: base64 strings, a Date with a fractional millisecond,
            // a bare value, an empty list.
            let saved = try await Self.save(
                alice, "untyped",
                fields: #"{"data":{"value":"aGVsbG8="},"chunks":{"value":["AQI=","AwQ="]},"when":{"value":1795240000123.4},"#
                    + #""stamps":{"value":[-1.9, 1795240000123.999]},"title":"bare string"}"#)
            #expect(saved.status == 200, "\(saved.text)")
            let record = try #require(saved.records.first)
            #expect(record["serverErrorCode"] == nil, "\(saved.text)")
            let fields = try #require(record["fields"])
            #expect(fields["data"] == ["value": "aGVsbG8=", "type": "BYTES"])
            #expect(fields["chunks"] == ["value": ["AQI=", "AwQ="], "type": "BYTES_LIST"])
            // Fractional milliseconds are truncated toward zero (README: "Untyped values").
            #expect(fields["when"] == ["value": 1_795_240_000_123, "type": "TIMESTAMP"])
            #expect(fields["stamps"] == ["value": [-1, 1_795_240_000_123], "type": "TIMESTAMP_LIST"])
            #expect(fields["title"] == ["value": "bare string", "type": "STRING"])
            let lookup = try await alice.lookup("untyped")
            #expect(lookup.records.first?["fields"]?["data"] == ["value": "aGVsbG8=", "type": "BYTES"])

            let empty = try await Self.save(alice, "empty", fields: #"{"chunks":{"value":[]}}"#)
            #expect(empty.records.first?["fields"]?["chunks"] == ["value": [], "type": "BYTES_LIST"], "\(empty.text)")
        }
    }

    @Test(arguments: Engine.available) func whatDoesNotConvertIsRefusedAndTypedValuesAreNotLoosened(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            try await Self.defineDoc(alice)
            let refused: [(String, String)] = [
                (#"{"data":{"value":"not base64!"}}"#, "BYTES"),
                (#"{"data":{"value":12}}"#, "BYTES"),
                (#"{"chunks":{"value":["AQI=", 3]}}"#, "chunks.value[1]"),
                (#"{"when":{"value":"yesterday"}}"#, "TIMESTAMP"),
                (#"{"when":{"value":1e300}}"#, "TIMESTAMP"),
                (#"{"title":{"value":{"fileChecksum":"x","size":1}}}"#, "STRING"),
                // A type given is the type: a STRING is not read as BYTES, a DOUBLE not as TIMESTAMP.
                (#"{"data":{"value":"aGVsbG8=","type":"STRING"}}"#, "BYTES"),
                (#"{"when":{"value":1795240000123.4,"type":"DOUBLE"}}"#, "TIMESTAMP"),
            ]
            for (index, (fields, fragment)) in refused.enumerated() {
                let reply = try await Self.save(alice, "bad-\(index)", fields: fields)
                #expect(reply.status == 400, "\(fields): \(reply.text)")
                #expect(reply.serverErrorCode == "BAD_REQUEST")
                #expect(reply["reason"]?.string?.contains(fragment) == true, "\(fields): \(reply.text)")
            }
            #expect(try await alice.lookup("bad-0").records.first?["serverErrorCode"] == "NOT_FOUND")
        }
    }

    /// Only a field the schema does not know yet is guessed, as CloudKit's clients mean it: a
    /// dictionary with `fileChecksum` is an asset, not a reference.
    @Test(arguments: Engine.available) func newFieldsAreGuessedAsCloudKitClientsMeanThem(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let saved = try await Self.save(
                alice, "guessed", fields: #"{"note":{"value":"aGVsbG8="},"at":{"value":1.5},"link":{"value":{"recordName":"x"}}}"#)
            let fields = try #require(saved.records.first?["fields"], "\(saved.text)")
            #expect(fields["note"]?["type"] == "STRING")
            #expect(fields["at"]?["type"] == "DOUBLE")
            #expect(fields["link"]?["type"] == "REFERENCE")
            // An empty list says nothing of its type: a new field needs one.
            let empty = try await Self.save(alice, "empty-new", fields: #"{"tags":{"value":[]}}"#)
            #expect(empty.serverErrorCode == "BAD_REQUEST")
            #expect(empty["reason"]?.string?.contains("empty list") == true, "\(empty.text)")
        }
    }
}
