import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NimbusProtocol

/// An upload's file in ``FileAssetStore``, open for appending: each request buffer is
/// written where it lies (no copy into an array first) by a writer thread of the file's own
/// (``PipelinedWrites``), while the task that stores the upload goes on receiving and hashing
/// the next buffers; and once ``syncStep`` more bytes are written, a thread outside the tasks'
/// pool fsyncs them while the rest still arrives.
///
/// The write is the upload's largest cost after the network (the kernel's copy into the page
/// cache); hashing the body is the next. One after the other in one task, an upload ran at
/// about half of nginx's `PUT` of the same file; side by side on two cores they overlap
/// (docs/PERFORMANCE.md, "Assets against nginx").
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
    private let background: BackgroundSync
    private let writes: PipelinedWrites
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
        background = BackgroundSync()
        writes = PipelinedWrites(fd: fd, length: length, background: background)
    }

    /// Queues `buffer` to be written at the end of the file; waits only while the writer is
    /// more than ``PipelinedWrites/limit`` bytes behind. Throws a write that failed earlier.
    func append(_ buffer: ByteBuffer) async throws {
        try await writes.enqueue(buffer)
        length += Int64(buffer.readableBytes)
    }

    /// Waits until every buffer queued is written (to the page cache); the first write failure.
    func drain() throws {
        let failed = writes.drain()
        guard failed == 0 else { throw Self.writeFailed(failed) }
    }

    static func writeFailed(_ errno: Int32) -> CloudKitError {
        CloudKitError(.internalError, "the server could not write the upload (errno \(errno))")
    }

    /// Waits until every byte written is on disk.
    func synchronize() throws {
        try drain()
        let failed = background.wait()
        guard failed == 0, fsync(fd) == 0 else {
            throw CloudKitError(
                .internalError, "the server could not store the upload on disk (fsync: errno \(failed != 0 ? failed : errno))")
        }
    }

    func close() {
        // The writer and a background fsync still running hold the descriptor.
        _ = writes.drain()
        _ = background.wait()
        _ = Foundation.close(fd)
    }
}

/// An upload file's writes, in order, on a Dispatch queue of their own: the task that stores
/// the upload hands a buffer over and goes on (receiving, hashing) while the queue writes it.
/// At most ``limit`` bytes wait for the writer (then the task waits), so an upload holds at
/// most about that much memory beyond the buffer being written; a background fsync starts
/// every ``UploadFile/syncStep`` bytes written. The first failure is kept: the next
/// ``enqueue(_:)`` and ``drain()`` report it, and nothing after it is written.
final class PipelinedWrites: Sendable {
    static let limit = 1 << 20

    private struct State {
        var queued = 0
        var failure: Int32 = 0
        var written: Int64 = 0
        var syncedUpTo: Int64 = 0
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state: NIOLockedValueBox<State>
    private let queue = DispatchQueue(label: "nimbus.upload-writes")
    private let fd: Int32
    private let background: BackgroundSync

    init(fd: Int32, length: Int64, background: BackgroundSync) {
        self.fd = fd
        self.background = background
        state = NIOLockedValueBox(State(written: length, syncedUpTo: length))
    }

    func enqueue(_ buffer: ByteBuffer) async throws {
        let count = buffer.readableBytes
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let now = state.withLockedValue { state in
                guard state.queued >= Self.limit, state.failure == 0 else { return true }
                state.waiter = waiter
                return false
            }
            if now { waiter.resume() }
        }
        let failed = state.withLockedValue { state in
            if state.failure == 0 { state.queued += count }
            return state.failure
        }
        guard failed == 0 else { throw UploadFile.writeFailed(failed) }
        queue.async { [self] in
            let failure = state.withLockedValue { $0.failure } == 0 ? Self.writeAll(fd, buffer) : 0
            var startSync = false
            let waiter = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
                state.queued -= count
                if state.failure == 0 { state.failure = failure }
                if failure == 0 { state.written += Int64(count) }
                if state.written - state.syncedUpTo >= UploadFile.syncStep {
                    startSync = true
                }
                guard state.queued < Self.limit || state.failure != 0, let waiter = state.waiter else { return nil }
                state.waiter = nil
                return waiter
            }
            if startSync, background.start(fd) { state.withLockedValue { $0.syncedUpTo = $0.written } }
            waiter?.resume()
        }
    }

    /// Waits for the queue to write everything handed to it; the errno of the first write that failed, or 0.
    func drain() -> Int32 {
        queue.sync {}
        return state.withLockedValue { $0.failure }
    }

    /// Writes all of `buffer` at the file's end; 0, or the errno.
    private static func writeAll(_ fd: Int32, _ buffer: ByteBuffer) -> Int32 {
        buffer.withUnsafeReadableBytes { raw in
            var done = 0
            while done < raw.count {
                let written = write(fd, raw.baseAddress! + done, raw.count - done)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                done += written
            }
            return 0
        }
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
