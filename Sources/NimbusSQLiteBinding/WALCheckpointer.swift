import Foundation
import GRDB
import GRDBSQLite
import NIOConcurrencyHelpers

/// Copies a WAL database's write-ahead log back into the database file from a connection of
/// its own, so that a commit does not: the server's store and a device's local store.
///
/// SQLite's default is for the commit that brings the log past 1,000 pages to checkpoint it
/// there and then: several milliseconds of copying and an `fsync` inside one write, with the
/// writer held. On the server that was the p99 of every user's writes under a flood
/// (docs/PERFORMANCE.md, "Fairness under a flood"); on a device, a million-record first sync
/// spent 3.1–3.7 s of its 15 s writer in 200-odd such commits, 17 ms each, and an app's own
/// write that lands on one waits as long (docs/PERFORMANCE.md, "A million-record first sync").
///
/// ```swift
/// let checkpointer = WALCheckpointer(path: path)
/// var configuration = Configuration()
/// configuration.prepareDatabase { db in checkpointer.takeOver(db) }
/// let pool = try DatabasePool(path: path, configuration: configuration)
/// ```
///
/// Passive checkpoints take no lock that writers or readers wait for. A connection it takes
/// over (``takeOver(_:)``) asks for one when a commit leaves ``requestPages`` or more in the
/// log, and checkpoints itself only past ``safetyPages``, if this checkpointer falls that far
/// behind. Requests made while one is queued or running are one request.
///
/// A log is started again from its beginning only by a writer that finds it wholly copied;
/// under steady writes a commit often lands while another connection copies, so the log may
/// grow to ``safetyPages`` before a commit checkpoints what is left (a few hundred pages, not
/// the whole log) and the next write starts it over.
package final class WALCheckpointer: Sendable {
    /// Where a checkpoint runs: given a job, runs it once, off the caller's thread.
    package typealias Runner = @Sendable (_ job: @escaping @Sendable () -> Void) -> Void

    /// A commit that leaves this many pages in the log asks for a checkpoint (SQLite's own
    /// auto-checkpoint threshold: 4 MB of 4 KB pages).
    package static let requestPages: Int32 = 1_000
    /// The store's own connections checkpoint past this many pages (40 MB of 4 KB pages): only
    /// if this checkpointer cannot keep up.
    package static let safetyPages: Int32 = 10_000

    private struct State {
        var queued = false
        var stopped = false
        /// The log's pages at the last commit that asked, and how many of them the last
        /// checkpoint copied: a commit asks again only when ``requestPages`` more were written.
        var logPages: Int32 = 0
        var copiedPages: Int32 = 0
    }

    private let path: String
    private let runner: Runner
    private let state = NIOLockedValueBox(State())
    /// The checkpointer's connection, opened at the first checkpoint, after the pool has put
    /// the file in WAL mode (a connection opened before that never sees the log); closed for
    /// good by ``stop()``. Its own lock, held for a whole checkpoint: a commit that asks for one never
    /// waits for it, and ``stop()`` closes the connection only between checkpoints (GRDB hands
    /// SQLite a null connection after `close()`).
    private let connection = NIOLockedValueBox<Connection>(.notOpened)

    private enum Connection {
        case notOpened
        case open(DatabaseQueue)
        case closed
    }
    /// Each checkpoint's outcome, for tests: the log's pages and how many of them are copied.
    private let observer: NIOLockedValueBox<(@Sendable (_ logPages: Int, _ copiedPages: Int) -> Void)?>

    /// A checkpointer for the database at `path`, whose checkpoints run on `runner` (by
    /// default a serial queue of utility quality of service).
    package init(path: String, runner: Runner? = nil) {
        self.path = path
        let queue = DispatchQueue(label: "nimbus.wal-checkpointer", qos: .utility)
        self.runner = runner ?? { job in queue.async(execute: job) }
        observer = NIOLockedValueBox(nil)
    }

    /// Makes `db`'s commits ask this checkpointer for checkpoints instead of doing them (from
    /// the pool's `prepareDatabase`; read-only connections are left as they are).
    ///
    /// SQLite's WAL hook replaces its auto-checkpoint: the hook asks for a checkpoint past
    /// ``requestPages`` and checkpoints the connection itself past ``safetyPages``. The hook
    /// holds this checkpointer weakly, through a box that SQLite releases when the connection
    /// closes (the destructor of a function registered with it), so neither outlives the other
    /// by accident.
    package func takeOver(_ db: Database) {
        guard !db.configuration.readonly else { return }
        let box = Unmanaged.passRetained(HookTarget(self)).toOpaque()
        let connection = db.sqliteConnection
        // The box's owner: SQLite calls the destructor when the connection closes (or at
        // once, when the registration fails: the connection then keeps SQLite's own
        // auto-checkpoint).
        let registered = sqlite3_create_function_v2(
            connection, "nimbus_wal_checkpointer", 0, SQLITE_UTF8, box,
            { context, _, _ in sqlite3_result_null(context) }, nil, nil,
            { box in box.map { Unmanaged<HookTarget>.fromOpaque($0).release() } })
        guard registered == SQLITE_OK else { return }
        sqlite3_wal_hook(
            connection,
            { box, connection, name, pages in
                if pages >= WALCheckpointer.safetyPages {
                    // Fallen behind: this commit copies what is left, as SQLite's own would.
                    sqlite3_wal_checkpoint_v2(connection, name, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                } else if pages >= WALCheckpointer.requestPages, let box {
                    Unmanaged<HookTarget>.fromOpaque(box).takeUnretainedValue().checkpointer?.committed(logPages: pages)
                }
                return SQLITE_OK
            }, box)
    }

    /// Makes `db`'s commits checkpoint only past ``safetyPages`` and ask for nothing: for a
    /// store that asks for checkpoints on a schedule of its own (the server's, every 100 ms).
    package static func leaveCheckpoints(_ db: Database) throws {
        try db.execute(sql: "PRAGMA wal_autocheckpoint = \(safetyPages)")
    }

    /// Asks for a passive checkpoint soon, on the runner; a no-op while one is queued.
    package func request() {
        let queue = state.withLockedValue { state -> Bool in
            guard !state.queued, !state.stopped else { return false }
            state.queued = true
            return true
        }
        guard queue else { return }
        runner { [self] in checkpoint() }
    }

    /// A commit left `pages` in the log: asks for a checkpoint once ``requestPages`` were
    /// written since the last one copied (a log that stays long while the checkpoints keep up
    /// is copied in steps of that size, not one step per commit).
    func committed(logPages pages: Int32) {
        let ask = state.withLockedValue { state -> Bool in
            // Fewer pages than the last commit saw: the log started over.
            if pages < state.logPages { state.copiedPages = 0 }
            state.logPages = pages
            return pages >= state.copiedPages + Self.requestPages
        }
        if ask { request() }
    }

    /// Stops checkpointing and closes the connection (after a checkpoint under way ends).
    package func stop() {
        state.withLockedValue { $0.stopped = true }
        connection.withLockedValue { connection in
            if case .open(let queue) = connection { try? queue.close() }
            connection = .closed
        }
    }

    /// Tells `observe` each checkpoint's outcome (tests).
    package func onCheckpoint(_ observe: @escaping @Sendable (_ logPages: Int, _ copiedPages: Int) -> Void) {
        observer.withLockedValue { $0 = observe }
    }

    /// One passive checkpoint; a busy or failed one waits for the next request.
    private func checkpoint() {
        state.withLockedValue { $0.queued = false }
        let result = connection.withLockedValue { connection -> (walFrameCount: Int, checkpointedFrameCount: Int)? in
            if case .notOpened = connection {
                var configuration = Configuration()
                configuration.busyMode = .timeout(10)
                configuration.label = "nimbus.wal-checkpointer"
                guard let queue = try? DatabaseQueue(path: path, configuration: configuration) else { return nil }
                connection = .open(queue)
            }
            guard case .open(let queue) = connection else { return nil }
            return try? queue.writeWithoutTransaction { db in try db.checkpoint(.passive) }
        }
        guard let result else { return }
        state.withLockedValue { $0.copiedPages = Int32(clamping: max(0, result.checkpointedFrameCount)) }
        observer.withLockedValue { $0 }?(result.walFrameCount, result.checkpointedFrameCount)
    }
}

/// What a connection's WAL hook points at: the checkpointer, held weakly.
private final class HookTarget: Sendable {
    weak let checkpointer: WALCheckpointer?
    init(_ checkpointer: WALCheckpointer) { self.checkpointer = checkpointer }
}
