import Foundation
import Logging
import Nimbus
import NimbusProtocol
import NimbusEngines
import NimbusServer
import NimbusStore
import NimbusSync
import NimbusTestSupport
import PostgresNIO
import Testing

@testable import NimbusPostgres

/// The sync engine over encrypted fields: merges run on the devices, on opened values, and
/// the server's storage (database file and WAL, asset files, PostgreSQL tables) holds none of
/// the plaintext.
@Suite("Sync with encrypted fields")
struct EncryptedSyncTests {
    static let zone = "Journal"
    static var configuration: SyncConfiguration {
        var configuration = SyncConfiguration(zones: [zone], subscriptionID: nil)
        configuration.encryptedFields = ["Entry": ["body", "mood"]]
        return configuration
    }

    /// An engine of device `name` whose container holds the user's keys in its own directory.
    static func device(_ harness: SyncHarness, _ name: String) throws -> (SyncEngine, Container) {
        try harness.encryptedEngine(name, configuration: configuration)
    }

    static func entry(_ name: String, body: String, mood: Int64, title: String) -> LocalRecord {
        LocalRecord(
            zoneName: zone, recordName: name, recordType: "Entry",
            fields: ["body": .string(body), "mood": .int64(mood), "title": .string(title)])
    }

    @Test(arguments: Engine.available)
    func devicesMergeOpenedValuesAndTheServerHoldsNoPlaintext(engine: Engine) async throws {
        let markers = ["MARKER-body-\(UUID().uuidString.prefix(8))", "MARKER-edit-\(UUID().uuidString.prefix(8))"]
        try await SyncHarness.with(engine: engine) { harness in
            try await Self.mergeAndInspect(harness, engine: engine, markers: markers)
        }
    }

    static func mergeAndInspect(_ harness: SyncHarness, engine: Engine, markers: [String]) async throws {
        let (a, phone) = try Self.device(harness, "A")
        let recovery = try #require(try await phone.encryption!.setUp(in: phone))
        let (b, laptop) = try Self.device(harness, "B")
        try await laptop.encryption!.restore(recoveryKey: recovery.text, in: laptop)
        try await a.start()
        try await b.start()

        try a.store.write { _, outbox in
            try outbox.save(Self.entry("e1", body: markers[0], mood: 3, title: "Monday"))
        }
        try await a.sendChanges()
        try await b.fetchChanges()
        #expect(try b.store.record(zone: Self.zone, name: "e1")?.fields["body"] == .string(markers[0]))

        // Both devices edit the record at once, different encrypted fields: the merge keeps both.
        try a.store.write { _, outbox in
            try outbox.save(Self.entry("e1", body: markers[1], mood: 3, title: "Monday"))
        }
        try b.store.write { _, outbox in
            try outbox.save(Self.entry("e1", body: markers[0], mood: 5, title: "Monday"))
        }
        try await a.sendChanges()
        try await b.sendChanges()
        try await a.fetchChanges()
        for device in [a, b] {
            let record = try device.store.record(zone: Self.zone, name: "e1")
            #expect(record?.fields["body"] == .string(markers[1]))
            #expect(record?.fields["mood"] == .int64(5))
            #expect(record?.fields["title"] == "Monday")
            #expect(try device.store.pendingCount() == 0)
        }

        // The server's storage holds none of it, in any encoding.
        let dumped = try await Self.dump(harness.storage)
        #expect(dumped.count > 1000, "the dump read the storage")
        for marker in markers {
            for form in MarkerForms.of(marker) {
                #expect(!dumped.contains(form), "\(engine): '\(form)' (a form of \(marker)) is in the server's storage")
            }
        }
        // The title, not marked encrypted, is in clear (the dump does find what is there).
        #expect(dumped.contains("Monday"))
    }

    /// Everything the server stored, as one text: on SQLite every file of its data directory
    /// (the database, its WAL, the asset files) as bytes; on PostgreSQL every row of every
    /// table of its schema as text.
    static func dump(_ storage: StorageLocation) async throws -> String {
        switch storage {
        case .sqlite(let directory):
            return try files(under: directory)
        case .postgres(let url, let schema):
            var logger = Logger(label: "e2e-test")
            logger.logLevel = .critical
            let store = try await PostgresStore.open(url: url, schema: schema, logger: logger)
            do {
                var text = ""
                let tables = try await store.rows(
                    PostgresQuery(
                        unsafeSQL: "SELECT table_name FROM information_schema.tables WHERE table_schema = '\(schema)'"))
                for table in tables {
                    let name = try table.decode(String.self)
                    let rows = try await store.rows(PostgresQuery(unsafeSQL: "SELECT t::text FROM \"\(schema)\".\"\(name)\" t"))
                    for row in rows { text += (try row.decode(String?.self)) ?? "" }
                }
                try await store.shutdown()
                return text
            } catch {
                try? await store.shutdown()
                throw error
            }
        }
    }

    /// Every file under `directory` (an export, a data directory), as one text of its bytes.
    static func files(under directory: String) throws -> String {
        var text = ""
        let files = FileManager.default.enumerator(atPath: directory)
        while let file = files?.nextObject() as? String {
            let path = (directory as NSString).appendingPathComponent(file)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
                continue
            }
            text += String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
        }
        return text
    }
}

/// The forms a marker would take in storage: as text, as the hex PostgreSQL prints of bytes,
/// and as base64 at each of the three byte alignments (the middle characters that do not
/// depend on the bytes around it).
enum MarkerForms {
    static func of(_ marker: String) -> [String] {
        let bytes = Array(marker.utf8)
        var forms = [marker, bytes.map { String(format: "%02x", $0) }.joined()]
        for offset in 0..<3 {
            let padded = [UInt8](repeating: 0, count: offset) + bytes
            let encoded = Data(padded).base64EncodedString()
            // Skip the characters that mix in the padding and the bytes that follow.
            let start = (offset * 4 + 2) / 3 + 1
            let end = encoded.count - 4
            if end > start {
                forms.append(String(encoded.dropFirst(start).prefix(end - start)))
            }
        }
        return forms
    }
}
