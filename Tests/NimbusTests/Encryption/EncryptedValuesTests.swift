import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Nimbus
import NimbusCrypto
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// `Record.encryptedValues` end to end against a real server: sealed on the device, opaque on
/// the server, opened on devices that hold the keys, and a clear error everywhere else.
@Suite("Encrypted values")
struct EncryptedValuesTests {
    static let zone = ZoneID(zoneName: "Journal")

    /// One device of a user: a container with its own key store (a fresh directory).
    struct Device {
        var container: Container
        var token: String
        var keysDirectory: URL
        var database: Database { container.privateCloudDatabase }
    }

    static func device(_ live: LiveServer, user: String) async throws -> Device {
        let token = try await live.server.store.createUser(
            name: user, email: nil, firstName: nil, lastName: nil, container: LiveServer.containerID
        ).token
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-keys-\(UUID().uuidString)")
        var container = Container(
            identifier: LiveServer.containerID, baseURL: live.baseURL,
            credentials: .apiToken(live.apiToken, webAuthToken: token))
        container.encryption = EncryptionKeys(store: FileKeyStore(directory: directory))
        return Device(container: container, token: token, keysDirectory: directory)
    }

    /// A request straight to the server, as any client (or the operator's tools) sees it.
    static func raw(_ live: LiveServer, _ device: Device, _ operation: String, _ body: JSON) async throws -> JSON {
        var request = HTTPClientRequest(
            url: "\(live.baseURL.absoluteString)/database/1/\(LiveServer.containerID)/development/private/\(operation)"
                + "?ckAPIToken=\(live.apiToken)&ckWebAuthToken=\(device.token)")
        request.method = .POST
        request.body = .bytes(ByteBuffer(bytes: body.serializedBytes()))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        return try JSON.parse(Array(try await response.body.collect(upTo: 1 << 22).readableBytesView))
    }

    static func rawFields(_ live: LiveServer, _ device: Device, _ name: String) async throws -> JSON? {
        let answer = try await raw(
            live, device, "records/lookup", ["zoneID": ["zoneName": "Journal"], "records": [["recordName": .string(name)]]])
        return answer["records"]?.array?.first?["fields"]
    }

    static func entry(_ name: String, body: String, mood: Int64 = 3) -> Record {
        var record = Record(recordType: "Entry", recordID: Record.ID(recordName: name, zoneID: zone))
        record["title"] = "Day \(name)"
        record.encryptedValues["body"] = body
        record.encryptedValues["mood"] = mood
        record.encryptedValues["tags"] = ["private", "travel"]
        return record
    }

    static func code(_ body: () async throws -> Void) async -> NimbusError.Code? {
        do {
            try await body()
            return nil
        } catch let error as NimbusError {
            return error.code
        } catch {
            return nil
        }
    }

    @Test func encryptedFieldsAreSealedOnTheWayAndOpenedOnTheDevice() async throws {
        try await LiveServer.with { live in
            let phone = try await Self.device(live, user: "alice")
            let recovery = try #require(try await phone.container.encryption!.setUp(in: phone.container))
            #expect(try await phone.container.encryption!.setUp(in: phone.container) == nil)
            try await phone.database.save(RecordZone(zoneID: Self.zone))
            let saved = try await phone.database.save(Self.entry("e1", body: "MARKER-secret-body"))
            #expect(saved.encryptedValues["body"] as String? == "MARKER-secret-body")
            #expect(saved.encryptedValues["mood"] as Int64? == 3)
            #expect(saved.encryptedValues["tags"] as [String]? == ["private", "travel"])
            #expect(saved["title"] as String? == "Day e1")
            #expect(saved.encryptedKeys == ["body", "mood", "tags"])

            // The server holds envelopes only.
            let fields = try #require(try await Self.rawFields(live, phone, "e1"))
            for name in ["body", "mood", "tags"] { #expect(fields[name]?["type"] == "ENCRYPTED_BYTES") }
            #expect(!fields.serialized().contains("MARKER"))
            #expect(fields["title"]?["value"] == "Day e1")

            // Read back through lookups, queries and the change feed.
            let fetched = try await phone.database.record(for: saved.id)
            #expect(fetched.encryptedValues["body"] as String? == "MARKER-secret-body")
            let changes = try await phone.database.recordZoneChanges(inZoneWith: Self.zone, since: nil)
            #expect(changes.modifications.first?.encryptedValues["mood"] as Int64? == 3)
            let query = try await phone.database.records(
                matching: Query(recordType: "Entry", filters: [.equals("title", "Day e1")]),
                inZoneWith: Self.zone)
            #expect(try query.matchResults.first?.1.get().encryptedValues["body"] as String? == "MARKER-secret-body")

            // An update re-seals what changed, and only that: the fields it does not send keep
            // their envelopes on the server, and come back opened; the server still holds no
            // plaintext.
            var edited = fetched
            edited.encryptedValues["body"] = "MARKER-edited"
            let updated = try await phone.database.save(edited)
            #expect(updated.encryptedValues["body"] as String? == "MARKER-edited")
            #expect(updated.encryptedValues["mood"] as Int64? == 3)
            #expect(updated.encryptedValues["tags"] as [String]? == ["private", "travel"])
            let after = try #require(try await Self.rawFields(live, phone, "e1"))
            #expect(!after.serialized().contains("MARKER"))
            #expect(after["body"] != fields["body"])
            #expect(after["mood"] == fields["mood"] && after["tags"] == fields["tags"])

            // A new device of the same user reads nothing until enrolled by the recovery key.
            let laptop = try await Self.device(live, user: "alice")
            #expect(await Self.code { _ = try await laptop.container.encryption!.setUp(in: laptop.container) } == .encryptionKeysMissing)
            #expect(await Self.code { _ = try await laptop.database.record(for: saved.id) } == .encryptionKeysMissing)
            #expect(await Self.code { try await laptop.container.encryption!.restore(recoveryKey: RecoveryKey().text, in: laptop.container) } == .decryptionFailed)
            try await laptop.container.encryption!.restore(recoveryKey: recovery.text, in: laptop.container)
            #expect(try await laptop.database.record(for: saved.id).encryptedValues["body"] as String? == "MARKER-edited")
            #expect(try await laptop.container.encryption!.setUp(in: laptop.container) == nil)
        }
    }

    /// A batch large enough to be sealed in slices on several cores, over two zones, with
    /// records without encrypted fields between the others: each record is sent with its own
    /// values, the answer gives each its own, and another device opens each as its own (a
    /// value sealed for one record opens as no other).
    @Test(arguments: Engine.available)
    func aLargeBatchIsSealedInSlicesAndEachRecordKeepsItsOwnValues(engine: Engine) async throws {
        try await LiveServer.with(engine: engine) { live in
            let phone = try await Self.device(live, user: "alice")
            let recovery = try #require(try await phone.container.encryption!.setUp(in: phone.container))
            let diary = ZoneID(zoneName: "Diary")
            for zone in [Self.zone, diary] { try await phone.database.save(RecordZone(zoneID: zone)) }
            let records = (0..<150).map { index in
                var record = Self.entry("b\(index)", body: "MARKER-body-\(index)", mood: Int64(index))
                if index % 3 == 0 { record = Record(recordType: "Entry", recordID: Record.ID(recordName: "b\(index)", zoneID: diary)) }
                if index % 3 == 0 && index % 2 == 0 { record.encryptedValues["body"] = "MARKER-diary-\(index)" }
                record["title"] = "Day \(index)"
                return record
            }
            let results = try await phone.database.modifyRecords(saving: records, atomically: false).saveResults
            #expect(results.count == records.count)
            let laptop = try await Self.device(live, user: "alice")
            try await laptop.container.encryption!.restore(recoveryKey: recovery.text, in: laptop.container)
            let fetched = try await laptop.database.records(for: records.map(\.id))
            for (index, record) in records.enumerated() {
                let saved = try #require(try results[record.id]?.get())
                let read = try #require(try fetched[record.id]?.get())
                for copy in [saved, read] {
                    #expect(copy["title"] as String? == "Day \(index)")
                    #expect(copy.encryptedValues["body"] as String? == record.encryptedValues["body"] as String?)
                    #expect(copy.encryptedValues["mood"] as Int64? == record.encryptedValues["mood"] as Int64?)
                    #expect(copy.encryptedKeys == record.encryptedKeys)
                }
            }
            let stored = try await Self.raw(
                live, phone, "records/lookup",
                ["zoneID": ["zoneName": "Journal"], "records": .array(records.map { ["recordName": .string($0.id.recordName)] })])
            #expect(!stored.serialized().contains("MARKER"))
        }
    }

    @Test func aTamperedOrMovedValueFailsWithATypedErrorAndNothingIsLost() async throws {
        try await LiveServer.with { live in
            let phone = try await Self.device(live, user: "alice")
            try await phone.container.encryption!.setUp(in: phone.container)
            try await phone.database.save(RecordZone(zoneID: Self.zone))
            try await phone.database.save(Self.entry("e1", body: "first"))
            try await phone.database.save(Self.entry("e2", body: "second"))
            let e1 = try #require(try await Self.rawFields(live, phone, "e1"))
            let e2 = try #require(try await Self.rawFields(live, phone, "e2"))

            // What a malicious server (or a broken client) could do: flip a byte, swap values
            // between fields and between records, cut a value short.
            var flipped = Array(Data(base64Encoded: e1["body"]!["value"]!.string!)!)
            flipped[flipped.count - 20] ^= 1
            let cases: [(String, String, JSON)] = [
                ("e1", "body", .string(Data(flipped).base64EncodedString())),
                ("e2", "body", e1["body"]!["value"]!),
                ("e2", "mood", e2["body"]!["value"]!),
                ("e1", "mood", .string(Data(Array(Data(base64Encoded: e1["mood"]!["value"]!.string!)!).prefix(40)).base64EncodedString())),
            ]
            for (name, field, value) in cases {
                let answer = try await Self.raw(
                    live, phone, "records/modify",
                    [
                        "zoneID": ["zoneName": "Journal"],
                        "operations": [
                            [
                                "operationType": "forceUpdate",
                                "record": [
                                    "recordName": .string(name), "recordType": "Entry",
                                    "fields": .object([field: ["value": value, "type": "ENCRYPTED_BYTES"]]),
                                ],
                            ]
                        ],
                    ])
                #expect(answer["records"]?.array?.first?["serverErrorCode"] == nil, "\(answer)")
                let id = Record.ID(recordName: name, zoneID: Self.zone)
                let failure = await Self.code { _ = try await phone.database.record(for: id) }
                #expect(failure == .decryptionFailed, "\(name).\(field)")
                #expect(await Self.code { _ = try await phone.database.recordZoneChanges(inZoneWith: Self.zone, since: nil) } == .decryptionFailed)
                // Restored, the record reads again: the server kept serving, nothing was lost.
                let original = (name == "e1" ? e1 : e2)[field]!
                _ = try await Self.raw(
                    live, phone, "records/modify",
                    [
                        "zoneID": ["zoneName": "Journal"],
                        "operations": [
                            [
                                "operationType": "forceUpdate",
                                "record": ["recordName": .string(name), "recordType": "Entry", "fields": .object([field: original])],
                            ]
                        ],
                    ])
                #expect(try await phone.database.record(for: id).encryptedValues["body"] as String? == (name == "e1" ? "first" : "second"))
            }
        }
    }

    /// Forwards to the real server and answers every save with `field` swapped for a plain
    /// string: what a hostile server (or anything between) could send back.
    final class SwappingTransport: Transport, Sendable {
        let inner = HTTPClientTransport()
        let field: String

        init(field: String) { self.field = field }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            var response = try await inner.send(request)
            guard request.url.path.hasSuffix("records/modify"), case .object(var answer) = try JSON.parse(Array(response.body)),
                case .array(let records) = answer["records"]
            else { return response }
            answer["records"] = .array(
                records.map { record in
                    guard case .object(var members) = record, case .object(var fields) = members["fields"] else { return record }
                    fields[field] = ["value": "INJECTED", "type": "STRING"]
                    members["fields"] = .object(fields)
                    return .object(members)
                })
            response.body = Data(JSON.object(answer).serializedBytes())
            return response
        }
    }

    /// A save's answer puts the app's own values back only where the envelope came back as
    /// sent: a field the answer gives in clear is not marked encrypted (it reads through the
    /// record's subscript, never through `encryptedValues`), and the fields that did come back
    /// as sent keep their values and marks.
    @Test func aSavesAnswerMarksEncryptedOnlyTheEnvelopesThatCameBackAsSent() async throws {
        try await LiveServer.with { live in
            let phone = try await Self.device(live, user: "alice")
            try await phone.container.encryption!.setUp(in: phone.container)
            try await phone.database.save(RecordZone(zoneID: Self.zone))
            var swapped = Container(
                identifier: LiveServer.containerID, baseURL: live.baseURL,
                credentials: .apiToken(live.apiToken, webAuthToken: phone.token), transport: SwappingTransport(field: "body"))
            swapped.encryption = phone.container.encryption
            let saved = try await swapped.privateCloudDatabase.save(Self.entry("e-swap", body: "MARKER-body"))
            #expect(saved.encryptedKeys == ["mood", "tags"])
            #expect(saved.encryptedValues["body"] as String? == nil)
            #expect(saved["body"] as String? == "INJECTED")
            #expect(saved.encryptedValues["mood"] as Int64? == 3)
            #expect(saved.encryptedValues["tags"] as [String]? == ["private", "travel"])
            // The server itself holds what the device sent.
            let fetched = try await phone.database.record(for: saved.id)
            #expect(fetched.encryptedValues["body"] as String? == "MARKER-body")
            #expect(fetched.encryptedKeys == ["body", "mood", "tags"])
        }
    }

    @Test func conflictsCarryTheOpenedServerRecordForTheMerge() async throws {
        try await LiveServer.with { live in
            let phone = try await Self.device(live, user: "alice")
            let recovery = try #require(try await phone.container.encryption!.setUp(in: phone.container))
            try await phone.database.save(RecordZone(zoneID: Self.zone))
            let base = try await phone.database.save(Self.entry("e1", body: "base"))
            let laptop = try await Self.device(live, user: "alice")
            try await laptop.container.encryption!.restore(recoveryKey: recovery.text, in: laptop.container)

            var fromLaptop = try await laptop.database.record(for: base.id)
            fromLaptop.encryptedValues["mood"] = Int64(5)
            _ = try await laptop.database.save(fromLaptop)
            var fromPhone = base
            fromPhone.encryptedValues["body"] = "phone's body"
            do {
                _ = try await phone.database.save(fromPhone)
                Issue.record("a stale save must conflict")
            } catch let error as NimbusError where error.code == .serverRecordChanged {
                let server = try #require(error.serverRecord)
                #expect(server.encryptedValues["mood"] as Int64? == 5)
                #expect(server.encryptedValues["body"] as String? == "base")
                #expect(error.ancestorRecord?.encryptedValues["body"] as String? == "base")
                var merged = server
                merged.encryptedValues["body"] = "phone's body"
                let saved = try await phone.database.save(merged)
                #expect(saved.encryptedValues["body"] as String? == "phone's body")
                #expect(saved.encryptedValues["mood"] as Int64? == 5)
            }
        }
    }

    @Test func aDeviceWithoutKeysAndThePublicDatabaseAreRefusedBeforeAnythingIsSent() async throws {
        try await LiveServer.with { live in
            var plain = try await Self.device(live, user: "bob")
            plain.container.encryption = nil
            try await plain.database.save(RecordZone(zoneID: Self.zone))
            #expect(await Self.code { _ = try await plain.database.save(Self.entry("e1", body: "x")) } == .encryptionKeysMissing)
            let keyed = try await Self.device(live, user: "carol")
            try await keyed.container.encryption!.setUp(in: keyed.container)
            var publicEntry = Record(recordType: "Entry")
            publicEntry.encryptedValues["body"] = "x"
            #expect(await Self.code { _ = try await keyed.container.publicCloudDatabase.save(publicEntry) } == .invalidArguments)
            var withReference = Self.entry("e2", body: "x")
            withReference.encryptedValues["link"] = Reference(recordName: "e1")
            try await keyed.database.save(RecordZone(zoneID: Self.zone))
            #expect(await Self.code { _ = try await keyed.database.save(withReference) } == .invalidArguments)
            #expect(try await Self.rawFields(live, keyed, "e2") == nil)
        }
    }
}
