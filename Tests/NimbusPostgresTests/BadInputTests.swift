import NimbusProtocol
import NimbusStore
import PostgresNIO
import Testing

@testable import NimbusPostgres

extension PostgresTests {
    /// Input PostgreSQL cannot store, or nonsense limits, get protocol errors, never a crash.
    @Suite("Bad input")
    struct BadInputTests {
        let database = DatabaseKey.privateDatabase(of: "_bad")

        @Test func textPostgreSQLCannotStoreIsABadRequest() async throws {
            try await TestPostgres.withNodes { stores in
                do {
                    _ = try await stores[0].modifyRecords(
                        [Requests.operation(.create, Requests.record("nul\u{0}name"))], zone: "_defaultZone", atomic: false,
                        policy: Requests.policy(), caller: Caller(userRecordName: "_bad"), in: database)
                    Issue.record("a record name with a NUL character was stored")
                } catch let error as CloudKitError {
                    #expect(error.code == .badRequest)
                }
                // Nothing was half-written, and the store still works.
                let page = try await stores[0].recordChanges(zone: "_defaultZone", since: nil, limit: 10, in: database)
                #expect(page.records.isEmpty)
            }
        }

        @Test func aLimitBelowOneStillAnswersAPage() async throws {
            try await TestPostgres.withNodes { stores in
                _ = try await stores[0].modifyRecords(
                    [Requests.operation(.create, Requests.record("a")), Requests.operation(.create, Requests.record("b"))],
                    zone: "_defaultZone", atomic: false, policy: Requests.policy(), caller: Caller(userRecordName: "_bad"),
                    in: database)
                let page = try await stores[0].recordChanges(zone: "_defaultZone", since: nil, limit: 0, in: database)
                #expect(page.records.map(\.recordName) == ["a"])
                #expect(page.moreComing)
                let zones = try await stores[0].databaseChanges(since: nil, limit: -5, in: database)
                #expect(zones.zones.count == 1)
            }
        }
    }
}
