import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NimbusProtocol

/// An upload's file in ``FileAssetStore``, open for appending: each request buffer is
/// written where it lies (no copy into an array first), and once ``syncStep`` more bytes are
/// written, a thread outside the tasks' pool fsyncs them while the rest still arrives.
///
/// The fsync before an upload is answered waits for every byte written since the last one;
/// on the reference machine's virtual disk that wait grows with those bytes (≈ 45 ms for 50
/// MB), however early the kernel starts writing them. Syncing in the background as the upload
/// arrives leaves the last fsync only the tail. It also makes what a dropped upload had
/// sent durable sooner. Not `Sendable`: it lives in the one task that stores the upload.
final class UploadFile {
    private let fd: Int32
    /// The file's length: where the next buffer goes.
    private(set) var length: Int64
    /// Where the last background fsync started.
    private var syncedUpTo: Int64
    private let background = BackgroundSync()
    /// How many bytes written since the last fsync start another.
    static let syncStep: Int64 = 8 << 20

    /// Opens (creating) the file at `path`, emptied when `truncate`.
    init(path: String, truncate: Bool) throws {
        fd = open(path, O_WRONLY | O_CREAT | (truncate ? O_TRUNC : 0), 0o644)
        guard fd >= 0 else {
            throw CloudKitError(.internalError, "the server could not open the upload's file (errno \(errno))")
        }
        let end = lseek(fd, 0, SEEK_END)
        guard end >= 0 else {
            let failed = errno
            _ = Foundation.close(fd)
            throw CloudKitError(.internalError, "the server could not open the upload's file (errno \(failed))")
        }
        length = Int64(end)
        syncedUpTo = length
    }

    /// Writes `buffer` at the end of the file.
    func append(_ buffer: ByteBuffer) throws {
        try buffer.withUnsafeReadableBytes { raw in
            var done = 0
            while done < raw.count {
                let written = write(fd, raw.baseAddress! + done, raw.count - done)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw CloudKitError(.internalError, "the server could not write the upload (errno \(errno))")
                }
                done += written
            }
        }
        length += Int64(buffer.readableBytes)
        if length - syncedUpTo >= Self.syncStep, background.start(fd) { syncedUpTo = length }
    }

    /// Waits until every byte written is on disk.
    func synchronize() throws {
        let failed = background.wait()
        guard failed == 0, fsync(fd) == 0 else {
            throw CloudKitError(
                .internalError, "the server could not store the upload on disk (fsync: errno \(failed != 0 ? failed : errno))")
        }
    }

    func close() {
        // A background fsync still running holds the descriptor.
        _ = background.wait()
        _ = Foundation.close(fd)
    }
}

/// One fsync at a time of an upload's file on a Dispatch thread, so that the task writing the
/// upload never waits for the disk before its end. The first failure is kept for
/// ``wait()``: Linux reports a write-back error to one fsync only, which must not be the
/// background one alone.
final class BackgroundSync: Sendable {
    private struct State {
        var running = false
        var failure: Int32 = 0
    }
    private let state = NIOLockedValueBox(State())
    private let done = DispatchGroup()

    /// Starts `fsync(fd)` unless one is still running; whether it started.
    func start(_ fd: Int32) -> Bool {
        let started = state.withLockedValue { state in
            if state.running { return false }
            state.running = true
            return true
        }
        guard started else { return false }
        let state = self.state
        DispatchQueue.global().async(group: done) {
            let failure = fsync(fd) == 0 ? 0 : errno
            state.withLockedValue { state in
                state.running = false
                if state.failure == 0 { state.failure = failure }
            }
        }
        return true
    }

    /// Waits for the fsync running, if any; the errno of the first that failed, or 0.
    func wait() -> Int32 {
        done.wait()
        return state.withLockedValue { $0.failure }
    }
}
