import Foundation
import NimbusProtocol
import NimbusStore
import NimbusTestSupport
import Testing

/// The store tests' former name for the shared ``Engine``.
typealias StoreEngine = Engine

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
