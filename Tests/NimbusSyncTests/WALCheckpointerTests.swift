import Foundation
import GRDB
import NIOConcurrencyHelpers
import NimbusSQLiteBinding
import Testing

/// The checkpoints of a device's store (and of the server's SQLite file): a commit asks for
/// one and leaves the copying to the checkpointer's own connection; it checkpoints itself only
/// when the checkpointer has fallen far behind.
@Suite("Checkpoints off the commit path")
struct WALCheckpointerTests {
    /// A WAL pool whose writer the checkpointer took over, as `LocalStore` opens one, in a
    /// directory removed afterwards; checkpoints run only when the test runs the jobs.
    static func withPool(_ body: (DatabasePool, WALCheckpointer, HeldJobs, String) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-wal-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/store.sqlite"
        let jobs = HeldJobs()
        let checkpointer = WALCheckpointer(path: path) { jobs.hold($0) }
        defer { checkpointer.stop() }
        var configuration = Configuration()
        configuration.prepareDatabase { db in checkpointer.takeOver(db) }
        let pool = try DatabasePool(path: path, configuration: configuration)
        try await pool.write { db in try db.execute(sql: "CREATE TABLE rows (id INTEGER PRIMARY KEY, body BLOB NOT NULL)") }
        try await body(pool, checkpointer, jobs, path)
        try pool.close()
    }

    /// `commits` transactions of about 100 pages of 4 KB each.
    static func write(_ pool: DatabasePool, commits: Int) async throws {
        for _ in 0..<commits {
            try await pool.write { db in
                for _ in 0..<100 { try db.execute(sql: "INSERT INTO rows (body) VALUES (randomblob(3900))") }
            }
        }
    }

    static func walPages(_ path: String) throws -> Int {
        let size = try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int ?? 0
        return size / 4096
    }

    @Test func commitsLeaveTheCopyingToTheCheckpointersConnection() async throws {
        try await Self.withPool { pool, checkpointer, jobs, path in
            let outcomes = NIOLockedValueBox<[(log: Int, copied: Int)]>([])
            checkpointer.onCheckpoint { log, copied in outcomes.withLockedValue { $0.append((log, copied)) } }
            // 3,000 pages: SQLite's own commits would have copied the log back at 1,000.
            try await Self.write(pool, commits: 30)
            #expect(try Self.walPages(path) >= 3_000)
            // Asked for once, however many commits passed the threshold while it waited.
            #expect(jobs.count == 1)

            jobs.runAll()
            let first = try #require(outcomes.withLockedValue { $0.first })
            #expect(first.log >= 3_000)
            #expect(first.copied == first.log)

            // Wholly copied: the next writes start the log over, and ask again past 1,000 pages.
            try await Self.write(pool, commits: 12)
            #expect(jobs.count == 1)
            jobs.runAll()
            let second = try #require(outcomes.withLockedValue { $0.last })
            #expect(second.log < 1_400)
            #expect(second.copied == second.log)
            // A reader in the middle of a read keeps the log from starting over, as commits
            // landing during checkpoints do under steady writes: then commits ask again only
            // after 1,000 pages more than the last checkpoint copied, not at every commit.
            try await Self.write(pool, commits: 11)
            #expect(jobs.count == 1)
            var readerConfiguration = Configuration()
            readerConfiguration.allowsUnsafeTransactions = true
            let reader = try DatabaseQueue(path: path, configuration: readerConfiguration)
            try reader.inDatabase { db in
                try db.execute(sql: "BEGIN")
                _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM rows")
            }
            jobs.runAll()
            let third = try #require(outcomes.withLockedValue { $0.last })
            #expect(third.copied == third.log)
            try await Self.write(pool, commits: 5)
            #expect(jobs.count == 0)
            try await Self.write(pool, commits: 6)
            #expect(jobs.count == 1)
            jobs.runAll()
            try reader.inDatabase { db in try db.execute(sql: "COMMIT") }
            try reader.close()

            let rows = try await pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM rows") }
            #expect(rows == 6_400)
        }
    }

    @Test func aCommitCheckpointsItselfOnlyWhenTheCheckpointerFellFarBehind() async throws {
        try await Self.withPool { pool, _, jobs, path in
            // The checkpointer never runs: past 10,000 pages, a commit copies the log itself
            // and the next write starts it over, so it never holds much more.
            try await Self.write(pool, commits: 130)
            #expect(jobs.count == 1)
            let pages = try Self.walPages(path)
            #expect(pages >= Int(WALCheckpointer.safetyPages))
            #expect(pages < Int(WALCheckpointer.safetyPages) + 300)
            let databasePages = try (FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0) / 4096
            // The log's pages copied into the file (some pages were in the log more than once).
            #expect(databasePages >= 9_000)
        }
    }
}

extension WALCheckpointerTests {
    @Test func aCheckpointAskedForBeforeStopRunsAfterItAsNothing() async throws {
        try await Self.withPool { pool, checkpointer, jobs, _ in
            let outcomes = NIOLockedValueBox(0)
            checkpointer.onCheckpoint { _, _ in outcomes.withLockedValue { $0 += 1 } }
            try await Self.write(pool, commits: 12)
            jobs.runAll()
            try await Self.write(pool, commits: 12)
            #expect(jobs.count == 1)
            checkpointer.stop()
            // The connection is closed: the job must neither use it (GRDB would hand SQLite a
            // null connection) nor open another.
            jobs.runAll()
            #expect(outcomes.withLockedValue { $0 } == 1)
            try await Self.write(pool, commits: 12)
            #expect(jobs.count == 0)
        }
    }
}

/// Checkpoint jobs the test runs when it chooses.
final class HeldJobs: Sendable {
    private let jobs = NIOLockedValueBox<[@Sendable () -> Void]>([])

    var count: Int { jobs.withLockedValue { $0.count } }

    func hold(_ job: @escaping @Sendable () -> Void) { jobs.withLockedValue { $0.append(job) } }

    func runAll() {
        for job in jobs.withLockedValue({ jobs in defer { jobs = [] }; return jobs }) { job() }
    }
}
