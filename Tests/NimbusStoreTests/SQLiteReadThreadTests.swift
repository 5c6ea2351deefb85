import Foundation
import GRDB
// `@testable import NimbusSQLite` needs the SQLite C module the engine imports.
import GRDBSQLite
import NimbusProtocol
import Testing

@testable import NimbusSQLite
@testable import NimbusStore

/// SQLite blocks the thread that runs a statement. The store's reads must therefore run on
/// GRDB's reader queues, never on Swift's cooperative pool (one thread per core): else a few
/// slow reads — a large change-feed page, a cold disk — stall every other request of the
/// server, including ones that never touch the database.
@Suite("SQLite reads leave Swift's cooperative pool free")
struct SQLiteReadThreadTests {
    @Test func slowReadsDoNotHoldTheCooperativePool() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-reads-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let gate = StatementGate()
        let store = try SQLiteStore(
            path: (directory as NSString).appendingPathComponent("nimbus.sqlite"),
            preparingEachConnection: { db in
                // Holds the token lookup itself, not the statements that set a connection up.
                db.trace(options: .statement) { event in
                    if case .statement(let statement) = event, statement.sql.contains("FROM tokens") { gate.pass() }
                }
            })
        let api = try await store.createContainer("iCloud.com.example.reads")

        // As many blocked readers as the cooperative pool has threads (GRDB opens at most 5
        // reader connections), and more readers waiting behind them.
        let poolWidth = ProcessInfo.processInfo.activeProcessorCount
        let blocking = min(poolWidth, 5)
        let probeRan: Bool = await withCheckedContinuation { continuation in
            Thread {
                gate.close()
                let readers = (0..<(poolWidth + 5)).map { _ in
                    Task.detached { try await store.lookUpTokens(apiToken: api.token, webAuthToken: nil) }
                }
                let allBlocked = gate.waitForBlocked(blocking, timeout: 10)
                // Work that needs nothing but a cooperative thread.
                let probe = DispatchSemaphore(value: 0)
                Task.detached { probe.signal() }
                let ran = allBlocked && probe.wait(timeout: .now() + 3) == .success
                gate.open()
                _ = readers
                continuation.resume(returning: ran)
            }.start()
        }
        #expect(probeRan, "a task could not run while \(blocking) SQLite reads were blocked")
        try store.close()
    }
}

/// Holds every SQL statement while closed; counts the threads it holds.
/// `@unchecked Sendable`: `blocked` and `isOpen` are only read and written under `condition`.
private final class StatementGate: @unchecked Sendable {
    private let condition = NSCondition()
    private var isOpen = true
    private var blocked = 0

    func close() { condition.withLock { isOpen = false } }

    func open() {
        condition.withLock {
            isOpen = true
            condition.broadcast()
        }
    }

    /// Called on the thread that runs a statement: waits while the gate is closed.
    func pass() {
        condition.withLock {
            guard !isOpen else { return }
            blocked += 1
            condition.broadcast()
            while !isOpen { condition.wait() }
            blocked -= 1
        }
    }

    /// Waits until `count` statements are held; `false` after `timeout` seconds.
    func waitForBlocked(_ count: Int, timeout: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        return condition.withLock {
            while blocked < count {
                if !condition.wait(until: deadline) { return false }
            }
            return true
        }
    }
}
