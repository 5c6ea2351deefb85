import Foundation
import Logging
import NimbusPostgres
import NimbusProtocol
import NimbusSQLite
import NimbusStore
import Testing

/// The engines the store's own behaviour tests run on: every `@Test(arguments:
/// StoreEngine.available)` drives one engine through the ``NimbusStorage`` protocol, without
/// HTTP, so both engines meet the same expectations.
///
/// PostgreSQL cases run when `NIMBUS_TEST_POSTGRES_URL` names a server (`.ci/run` starts a
/// throwaway one); each test gets a fresh schema, dropped afterwards.
enum StoreEngine: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite
    case postgres

    static let postgresURL: String? = ProcessInfo.processInfo.environment["NIMBUS_TEST_POSTGRES_URL"].flatMap {
        $0.isEmpty ? nil : $0
    }

    /// The engines this run can reach.
    static var available: [StoreEngine] { postgresURL == nil ? [.sqlite] : [.sqlite, .postgres] }

    var testDescription: String { rawValue }

    static let logger: Logger = {
        var logger = Logger(label: "nimbus-store-tests")
        logger.logLevel = .critical
        return logger
    }()

    /// Opens fresh, empty storage of this engine whose clock is `clock`, runs `body` with it,
    /// then closes it and removes its data, also when `body` throws.
    func withStore<T>(clock: WallClock = .system, _ body: (any NimbusStorage) async throws -> T) async throws -> T {
        let id = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let store: any NimbusStorage
        let remove: () async throws -> Void
        switch self {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-store-\(id)").path
            store = try SQLiteStore(directory: directory, clock: clock)
            remove = { try FileManager.default.removeItem(atPath: directory) }
        case .postgres:
            let url = Self.postgresURL ?? ""
            let schema = "nimbus_store_\(id.prefix(16))"
            store = try await PostgresStore.open(
                url: url, schema: schema, maximumConnections: 4, clock: clock, logger: Self.logger)
            remove = { try await PostgresStore.dropSchema(schema, url: url, logger: Self.logger) }
        }
        do {
            let result = try await body(store)
            try await store.shutdown()
            try await remove()
            return result
        } catch {
            try? await store.shutdown()
            try? await remove()
            throw error
        }
    }
}

/// Shorthands for driving a store in tests.
enum Fixture {
    static let container = "iCloud.com.example.store"
    static let alice = DatabaseKey(container: container, environment: .development, scope: .private, owner: "_alice")
    static let bob = DatabaseKey(container: container, environment: .development, scope: .private, owner: "_bob")
    static let caller = Caller(userRecordName: "_alice", deviceID: "phone")
    static let aliceRecipient = NotificationRecipient(
        container: container, environment: .development, userRecordName: "_alice")

    /// An instant well before any test runs (2001-09-09T01:46:40Z): data stamped with the
    /// system clock can never be mistaken for data stamped with it.
    static let past: Int64 = 1_000_000_000_000

    static func operation(
        _ type: RecordOperationType, _ name: String, tag: String? = nil, fields: [String: FieldValue] = [:]
    ) -> RecordOperation {
        RecordOperation(type: type, record: Record(recordName: name, recordType: "Item", recordChangeTag: tag, fields: fields))
    }

    static func policy(now: Int64 = past) -> WritePolicy { WritePolicy(creatorOnlyWrites: false, now: now) }

    /// The record each result saved; `nil` for a failure or a deletion.
    static func saved(_ outcome: ModifyOutcome) -> [StoredRecord?] {
        outcome.results.map { if case .saved(let record) = $0 { record } else { nil } }
    }

    /// The error code of each result; `nil` for a success.
    static func errorCodes(_ outcome: ModifyOutcome) -> [ServerErrorCode?] {
        outcome.results.map { if case .failed(let error) = $0 { error.code } else { nil } }
    }

    /// The code of the ``CloudKitError`` `body` throws, or `nil` if it throws none.
    static func errorCode(_ body: () async throws -> Void) async -> ServerErrorCode? {
        do {
            try await body()
            return nil
        } catch let error as CloudKitError {
            return error.code
        } catch {
            Issue.record("expected a CloudKitError, got \(error)")
            return nil
        }
    }
}

extension RecordStore {
    /// Writes one request to `zone` of Alice's database as Alice's phone.
    func modify(
        _ operations: [RecordOperation], zone: String = "Z", atomic: Bool = false, now: Int64 = Fixture.past,
        in database: DatabaseKey = Fixture.alice
    ) async throws -> ModifyOutcome {
        try await modifyRecords(
            operations, zone: zone, atomic: atomic, policy: Fixture.policy(now: now), caller: Fixture.caller, in: database)
    }

    /// Reads a zone's whole record feed after `token`, page by page; every page but the last
    /// must say `moreComing`.
    func allChanges(zone: String = "Z", since token: String?, pageSize: Int, in database: DatabaseKey = Fixture.alice)
        async throws -> (pages: [[StoredRecord]], token: String)
    {
        var pages: [[StoredRecord]] = []
        var token = token
        while true {
            let page = try await recordChanges(zone: zone, since: token, limit: pageSize, in: database)
            pages.append(page.records)
            token = page.syncToken
            if !page.moreComing { return (pages, page.syncToken) }
            if pages.count > 1000 {
                Issue.record("the feed never ended")
                return (pages, page.syncToken)
            }
        }
    }
}
