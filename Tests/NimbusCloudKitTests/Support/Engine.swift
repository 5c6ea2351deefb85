import Foundation
import NimbusEngines
import NimbusStore
import NimbusServer
import Testing

/// The storage engines the end-to-end tests run on: SQLite always, PostgreSQL when
/// `NIMBUS_TEST_POSTGRES_URL` names a server (each test in a schema of its own).
enum Engine: String, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    static var available: [Engine] {
        let url = ProcessInfo.processInfo.environment["NIMBUS_TEST_POSTGRES_URL"] ?? ""
        return url.isEmpty ? [.sqlite] : [.sqlite, .postgres]
    }

    var testDescription: String { rawValue }

    func freshStorage() -> StorageLocation {
        let id = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        if self == .postgres {
            let url = ProcessInfo.processInfo.environment["NIMBUS_TEST_POSTGRES_URL"] ?? ""
            return .postgres(url: url, schema: "nimbus_ck_\(id.prefix(16))")
        }
        return .sqlite(directory: FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-cloudkit-\(id)").path)
    }
}
