import Foundation
import NimbusEngines
import NimbusStore
import Testing
import NimbusServer

/// The engines the dashboard's tests run on: SQLite always, PostgreSQL when
/// `NIMBUS_TEST_POSTGRES_URL` names a server (each test in a schema of its own).
enum Engine: String, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    static var available: [Engine] {
        ProcessInfo.processInfo.environment["NIMBUS_TEST_POSTGRES_URL"].map { $0.isEmpty ? [.sqlite] : [.sqlite, .postgres] }
            ?? [.sqlite]
    }

    var testDescription: String { rawValue }

    func freshStorage() -> StorageLocation {
        let id = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        if self == .postgres {
            return .postgres(url: ProcessInfo.processInfo.environment["NIMBUS_TEST_POSTGRES_URL"] ?? "", schema: "nimbus_dash_\(id.prefix(16))")
        }
        return .sqlite(directory: FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-dash-\(id)").path)
    }
}
