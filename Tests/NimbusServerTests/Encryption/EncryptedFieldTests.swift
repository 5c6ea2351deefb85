import Foundation
import NimbusProtocol
import NimbusStore
import NimbusTestSupport
import Testing

/// `ENCRYPTED_BYTES` (docs/ENCRYPTION.md): the server stores and returns the envelope as
/// sent, and refuses what would need its plaintext (filters, sorts, indexes) and encrypted
/// fields in the public database.
@Suite("Encrypted fields on the server")
struct EncryptedFieldTests {
    /// An envelope as a device would send it: opaque bytes (here random, with the version byte).
    static func envelope(_ count: Int = 61) -> String {
        Data([1] + (1..<count).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
    }

    static func save(_ client: TestClient, _ name: String, caption: String, title: String = "t") async throws
        -> TestClient.Reply
    {
        try await client.modify(
            "Album",
            [
                [
                    "operationType": "create",
                    "record": [
                        "recordName": .string(name), "recordType": "Photo",
                        "fields": [
                            "caption": ["value": .string(caption), "type": "ENCRYPTED_BYTES"],
                            "title": ["value": .string(title), "type": "STRING"],
                        ],
                    ],
                ]
            ])
    }

    @Test(arguments: Engine.available) func anEnvelopeIsStoredAndReturnedAsSent(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Album")
            let sealed = Self.envelope()
            let saved = try await Self.save(alice, "p1", caption: sealed)
            #expect(saved.status == 200, "\(saved.text)")
            #expect(saved.records.first?["fields"]?["caption"] == ["value": .string(sealed), "type": "ENCRYPTED_BYTES"])

            let lookup = try await alice.post(
                "records/lookup", ["zoneID": ["zoneName": "Album"], "records": [["recordName": "p1"]]])
            #expect(lookup.records.first?["fields"]?["caption"]?["value"]?.string == sealed)
            let changes = try await alice.changes("Album")
            #expect(changes.records.first?["fields"]?["caption"]?["type"] == "ENCRYPTED_BYTES")
            #expect(changes.records.first?["fields"]?["caption"]?["value"]?.string == sealed)

            // An update sent untyped takes the field's type from the schema, as other types do.
            let resealed = Self.envelope(80)
            let tag = try #require(saved.records.first?["recordChangeTag"]?.string)
            let update = try await alice.modify(
                "Album",
                [
                    [
                        "operationType": "update",
                        "record": [
                            "recordName": "p1", "recordType": "Photo", "recordChangeTag": .string(tag),
                            "fields": ["caption": ["value": .string(resealed)]],
                        ],
                    ]
                ])
            #expect(update.records.first?["fields"]?["caption"] == ["value": .string(resealed), "type": "ENCRYPTED_BYTES"])

            // A field's type never changes: a plain STRING to the encrypted field is refused.
            let plain = try await alice.modify(
                "Album",
                [
                    [
                        "operationType": "forceUpdate",
                        "record": [
                            "recordName": "p1", "recordType": "Photo",
                            "fields": ["caption": ["value": "in clear", "type": "STRING"]],
                        ],
                    ]
                ])
            #expect(plain.records.first?["serverErrorCode"] == "BAD_REQUEST" || plain.serverErrorCode == "BAD_REQUEST")
            #expect(plain.text.contains("ENCRYPTED_BYTES"))
        }
    }

    @Test(arguments: Engine.available) func filtersAndSortsOnAnEncryptedFieldAreRefused(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Album")
            #expect(try await Self.save(alice, "p1", caption: Self.envelope()).status == 200)
            let filter: JSON = [
                "fieldName": "caption", "comparator": "EQUALS",
                "fieldValue": ["value": .string(Self.envelope()), "type": "ENCRYPTED_BYTES"],
            ]
            let filtered = try await alice.query("Photo", filters: [filter], zone: "Album")
            #expect(filtered.status == 400)
            #expect(filtered.serverErrorCode == "BAD_REQUEST")
            #expect(filtered.text.contains("encrypted field"), "\(filtered.text)")
            let sorted = try await alice.query(
                "Photo", sorts: [["fieldName": "caption", "ascending": true]], zone: "Album")
            #expect(sorted.status == 400)
            #expect(sorted.serverErrorCode == "BAD_REQUEST")
            #expect(sorted.text.contains("encrypted field"), "\(sorted.text)")
            // Other fields still query, and the envelope comes back as stored.
            let byTitle = try await alice.query(
                "Photo", filters: [["fieldName": "title", "comparator": "EQUALS", "fieldValue": ["value": "t"]]],
                zone: "Album")
            #expect(byTitle.status == 200, "\(byTitle.text)")
            #expect(byTitle.records.first?["fields"]?["caption"]?["type"] == "ENCRYPTED_BYTES")
            // The server keeps serving.
            #expect(try await alice.changes("Album").status == 200)
        }
    }

    @Test(arguments: Engine.available) func thePublicDatabaseRefusesEncryptedFields(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let reply = try await alice.modify(
                "_defaultZone",
                [
                    [
                        "operationType": "create",
                        "record": [
                            "recordName": "p", "recordType": "Photo",
                            "fields": ["caption": ["value": .string(Self.envelope()), "type": "ENCRYPTED_BYTES"]],
                        ],
                    ]
                ], scope: "public")
            #expect(reply.status == 400)
            #expect(reply.serverErrorCode == "BAD_REQUEST")
            #expect(reply.text.contains("public database"), "\(reply.text)")
        }
    }

    @Test(arguments: Engine.available) func aValueThatIsNoEnvelopeIsRefused(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Album")
            for bad: JSON in ["not base64!", "", 42, ["a": 1]] {
                let reply = try await alice.modify(
                    "Album",
                    [
                        [
                            "operationType": "create",
                            "record": [
                                "recordName": "p", "recordType": "Photo",
                                "fields": ["caption": ["value": bad, "type": "ENCRYPTED_BYTES"]],
                            ],
                        ]
                    ])
                #expect(reply.status == 400, "\(bad): \(reply.text)")
                #expect(reply.serverErrorCode == "BAD_REQUEST")
            }
            #expect(try await Self.save(alice, "ok", caption: Self.envelope()).status == 200)
        }
    }

    @Test func theSchemaRefusesAnIndexOnAnEncryptedField() throws {
        for index in ["QUERYABLE", "SORTABLE", "SEARCHABLE"] {
            #expect {
                _ = try SchemaFile.parse("DEFINE SCHEMA RECORD TYPE Photo ( caption ENCRYPTED_BYTES \(index) );")
            } throws: { error in
                guard let error = error as? CloudKitError else { return false }
                return error.code == .badRequest && error.reason.contains("encrypted")
            }
        }
        let schema = try SchemaFile.parse("DEFINE SCHEMA RECORD TYPE Photo ( caption ENCRYPTED_BYTES, title STRING QUERYABLE );")
        #expect(schema.recordTypes["Photo"]?.fields["caption"]?.type == .encryptedBytes)
        #expect(try SchemaFile.parse(SchemaFile.text(of: schema)) == schema)
    }
}
