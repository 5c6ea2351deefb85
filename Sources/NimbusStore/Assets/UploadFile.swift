import Foundation
import NIOCore
import NimbusProtocol

/// An upload's file in ``FileAssetStore``, open for appending: each request buffer is
/// written where it lies (no copy into an array first), and on Linux the kernel is asked to
/// start writing every complete ``writebackStep`` to disk while the rest still arrives, so
/// the fsync before the upload is answered waits for the last few MiB instead of the whole
/// file. Not `Sendable`: it lives in the one task that stores the upload.
final class UploadFile {
    private let fd: Int32
    /// The file's length: where the next buffer goes.
    private(set) var length: Int64
    /// Where the writeback already asked for ends.
    private var writebackStart: Int64
    /// How many written bytes make the kernel start writing them out.
    static let writebackStep: Int64 = 4 << 20

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
        writebackStart = length
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
        if length - writebackStart >= Self.writebackStep {
            Writeback.start(fd, from: writebackStart, count: length - writebackStart)
            writebackStart = length
        }
    }

    /// Waits until every byte written is on disk.
    func synchronize() throws {
        guard fsync(fd) == 0 else {
            throw CloudKitError(.internalError, "the server could not store the upload on disk (fsync: errno \(errno))")
        }
    }

    func close() {
        _ = Foundation.close(fd)
    }
}

/// `sync_file_range(fd, offset, count, SYNC_FILE_RANGE_WRITE)`: starts writing a range of a
/// file's dirty pages to disk and returns without waiting (Linux). Swift's Glibc module does
/// not declare it (it needs `_GNU_SOURCE`), so it is looked up once by name; elsewhere, or
/// when the lookup fails, nothing is started early and the final fsync does all the work.
enum Writeback {
    private typealias SyncFileRange = @convention(c) (Int32, Int64, Int64, UInt32) -> Int32
    private static let syncWrite: UInt32 = 2  // SYNC_FILE_RANGE_WRITE in <fcntl.h>

    private static let syncFileRange: SyncFileRange? = {
        #if os(Linux)
        guard let symbol = dlsym(nil, "sync_file_range") else { return nil }
        return unsafeBitCast(symbol, to: SyncFileRange.self)
        #else
        return nil
        #endif
    }()

    static func start(_ fd: Int32, from offset: Int64, count: Int64) {
        // Only a hint: a failure leaves the work to the fsync.
        _ = syncFileRange?(fd, offset, count, syncWrite)
    }
}
