import Foundation
import GRDB
import NimbusStore

/// Copies the write-ahead log back into the database file from a connection of its own, so
/// a commit never does it.
///
/// SQLite's default is for the commit that brings the WAL past 1 000 pages to checkpoint it
/// there and then: several milliseconds of copying and an `fsync` inside one request, with
/// the writer held, every few hundred single-record writes — the p99 of every user's writes
/// (docs/PERFORMANCE.md, "Fairness under a flood"). Here this connection runs a passive
/// checkpoint every ``interval`` (passive checkpoints take no lock that writers or readers
/// wait for), and the store's connections checkpoint only past ``safetyPages``.
///
/// A log is started again from its beginning only by a writer that finds it wholly copied,
/// which under steady writes is rarely true after a checkpoint of another connection (a
/// commit lands while it copies). So the log grows to ``safetyPages``; the commit that passes
/// them checkpoints what this connection has not copied yet — a few hundred pages at most,
/// not the whole log — and the next write starts the log over.
final class WALCheckpointer: Sendable {
    /// How often the log is checkpointed.
    static let interval: Duration = .milliseconds(100)
    /// The store's own connections checkpoint past this many pages (40 MB of 4 KB pages):
    /// only if this checkpointer cannot keep up.
    static let safetyPages = 10_000

    private let task: Task<Void, Never>
    private let connection: DatabaseQueue
    /// Where checkpoints run: at nice 19, so copying the log yields the cores to requests (the
    /// commit past ``safetyPages`` is the backstop if it falls behind on a busy machine). Not
    /// `SCHED_IDLE`: beside a flood that keeps both cores busy, checkpoints then fell behind
    /// and a quiet user's p99 grew (docs/PERFORMANCE.md, "Tracing overhead", eighth round).
    private let thread: LowPriorityThread

    /// Starts checkpointing the WAL database at `path` (already created and migrated).
    init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.label = "nimbus.wal-checkpointer"
        let connection = try DatabaseQueue(path: path, configuration: configuration)
        self.connection = connection
        let thread = LowPriorityThread(name: "nimbus-checkpoint", priority: .lowest)
        self.thread = thread
        let wal = path + "-wal"
        task = Task.detached(priority: .utility) {
            var seen = WALStamp.of(wal)
            while !Task.isCancelled {
                try? await Task.sleep(for: Self.interval)
                guard !Task.isCancelled else { break }
                // Nothing written since the last round (an idle store): nothing to copy.
                let stamp = WALStamp.of(wal)
                guard stamp != seen else { continue }
                seen = stamp
                // On the low-priority thread (GRDB's synchronous API runs there). A busy or
                // failed checkpoint is tried again on the next round.
                _ = try? await thread.run { try connection.writeWithoutTransaction { db in try db.checkpoint(.passive) } }
            }
        }
    }

    /// Stops checkpointing and closes the connection (after a checkpoint under way ends), so
    /// the files can be removed once the store is closed.
    func stop() {
        task.cancel()
        thread.stop()
        try? connection.close()
    }

    deinit {
        task.cancel()
        thread.stop()
    }
}

/// The size and modification time of a WAL file: whether anything was written since the
/// checkpointer last looked, for a `stat` call instead of a checkpoint.
struct WALStamp: Equatable {
    var size: Int64
    var modifiedNanos: Int64

    static func of(_ path: String) -> WALStamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        #if canImport(Darwin)
        let time = info.st_mtimespec
        #else
        let time = info.st_mtim
        #endif
        return WALStamp(size: Int64(info.st_size), modifiedNanos: Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec))
    }
}
