import NimbusProtocol
import NimbusStore
import NimbusTestSupport
import Testing

/// The dashboard's operators through the storage protocol, on every engine: accounts,
/// sessions by token hash until they expire, the audit log and the private-data switch.
@Suite("Store: operators")
struct OperatorStoreTests {
    typealias F = Fixture

    @Test(arguments: Engine.available)
    func operatorsSessionsAndTheirEnd(engine: Engine) async throws {
        try await engine.withStore { store in
            try await store.createOperator(name: "ops", passwordHash: "$2b$hash", now: F.past)
            await #expect(throws: AccountError.self) { try await store.createOperator(name: "ops", passwordHash: "x", now: F.past) }
            await #expect(throws: AccountError.self) { try await store.createOperator(name: "no spaces", passwordHash: "x", now: F.past) }
            #expect(try await store.operatorAccount(named: "ops") == OperatorAccount(name: "ops", passwordHash: "$2b$hash", createdAt: F.past))
            #expect(try await store.operatorAccount(named: "nobody") == nil)

            let session = OperatorSession(tokenHash: "h1", operatorName: "ops", csrfToken: "c1", createdAt: F.past, expiresAt: F.past + 1000)
            try await store.openOperatorSession(session)
            #expect(try await store.operatorSession(tokenHash: "h1", now: F.past + 999) == session)
            #expect(try await store.operatorSession(tokenHash: "h1", now: F.past + 1000) == nil, "expired")
            #expect(try await store.operatorSession(tokenHash: "other", now: F.past) == nil)

            try await store.openOperatorSession(
                OperatorSession(tokenHash: "h2", operatorName: "ops", csrfToken: "c2", createdAt: F.past, expiresAt: F.past + 9000))
            try await store.closeOperatorSession(tokenHash: "h2", now: F.past)
            #expect(try await store.operatorSession(tokenHash: "h2", now: F.past) == nil, "signed out")

            try await store.openOperatorSession(
                OperatorSession(tokenHash: "h3", operatorName: "ops", csrfToken: "c3", createdAt: F.past, expiresAt: F.past + 9000))
            #expect(try await store.setOperatorPassword(name: "ops", passwordHash: "$2b$new"))
            #expect(try await store.operatorSession(tokenHash: "h3", now: F.past) == nil, "a new password ends the sessions")
            #expect(try await !store.setOperatorPassword(name: "nobody", passwordHash: "x"))
            #expect(try await store.listOperators().map(\.name) == ["ops"])
        }
    }

    @Test(arguments: Engine.available)
    func auditLogAndPrivateDataSwitch(engine: Engine) async throws {
        try await engine.withStore { store in
            _ = try await store.createContainer(F.container)
            #expect(try await !store.operatorsMayReadPrivateData(container: F.container), "off by default")
            try await store.setOperatorsMayReadPrivateData(true, container: F.container)
            #expect(try await store.operatorsMayReadPrivateData(container: F.container))
            try await store.setOperatorsMayReadPrivateData(false, container: F.container)
            #expect(try await !store.operatorsMayReadPrivateData(container: F.container))
            await #expect(throws: AccountError.self) { try await store.operatorsMayReadPrivateData(container: "iCloud.none") }

            for index in 0..<3 {
                try await store.appendAudit(
                    OperatorAuditEntry(at: F.past + Int64(index), operatorName: "ops", action: "a\(index)", container: F.container, detail: ""))
            }
            #expect(try await store.auditLog(limit: 2).map(\.action) == ["a2", "a1"], "newest first")

            _ = try await store.createUser(name: "bob", email: nil, firstName: nil, lastName: nil, container: F.container)
            _ = try await store.createUser(name: "alice", email: "a@example.com", firstName: nil, lastName: nil, container: F.container)
            #expect(try await store.containerUsers(container: F.container).map(\.name) == ["alice", "bob"])
        }
    }
}
