import Foundation
import NimbusSQLiteBinding

/// Asks the server store's ``WALCheckpointer`` for a checkpoint every ``interval`` when the
/// log was written since the last look (a `stat` call, so an idle store costs nothing more).
///
/// The server's commits do not ask themselves (``WALCheckpointer/leaveCheckpoints(_:)``): the
/// quiet user's p99 beside a flood (docs/PERFORMANCE.md, "Fairness under a flood") was tuned
/// with checkpoints on this schedule, at nice 19.
final class WALPolling: Sendable {
    /// How often the log is looked at.
    static let interval: Duration = .milliseconds(100)

    private let task: Task<Void, Never>

    /// Starts looking at the log of the database at `path`.
    init(path: String, checkpointer: WALCheckpointer) {
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
                checkpointer.request()
            }
        }
    }

    /// Stops looking.
    func stop() { task.cancel() }

    deinit { task.cancel() }
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
