import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The asset bench's files: a file of random bytes, the disk's copy rate it is measured
/// against, a file read as a stream of buffers (an upload's body) and a stream written to a
/// file (a download). Plain POSIX calls in chunks of ``chunkSize``: nothing holds a file in
/// memory, and nothing is fsynced (the copy neither).
enum BenchFiles {
    /// The buffer of the copy and of the file writes here.
    static let chunkSize = 1 << 20
    /// The buffer of an upload's body: a fresh one per read, so under glibc's mmap threshold
    /// (4 MiB in the bench, as in `nimbus serve`), else every buffer is a fresh mmap.
    static let bodyChunkSize = 256 << 10

    /// A file of `size` random bytes at `path`; returns its SHA-256 as CloudKit's
    /// `fileChecksum` (base64), computed while writing.
    static func makeRandomFile(at path: String, size: Int) throws -> String {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw BenchError("cannot create \(path): errno \(errno)") }
        defer { close(fd) }
        // SplitMix64 from a random seed: incompressible bytes without a getrandom(2) per word.
        var state = UInt64.random(in: .min ... .max)
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: chunkSize)
        var left = size
        while left > 0 {
            let count = min(left, chunkSize)
            buffer.withUnsafeMutableBytes { raw in
                let words = raw.bindMemory(to: UInt64.self)
                for index in words.indices { words[index] = next() }
            }
            try buffer.withUnsafeBytes { raw in
                try writeAll(fd, UnsafeRawBufferPointer(rebasing: raw[0..<count]), path: path)
                hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: raw[0..<count]))
            }
            left -= count
        }
        return Data(hasher.finalize()).base64EncodedString()
    }

    /// Copies `source` to `target` (replacing it) with a read/write loop of ``chunkSize``
    /// buffers, no fsync: what the disk and page cache do with these bytes, the yardstick of
    /// the upload and download rates. With `durable`, fsyncs the copy before returning (as the
    /// server does with an upload before answering it): a reference. Returns the bytes copied.
    @discardableResult
    static func copy(_ source: String, to target: String, durable: Bool = false) throws -> Int64 {
        let input = open(source, O_RDONLY)
        guard input >= 0 else { throw BenchError("cannot open \(source): errno \(errno)") }
        defer { close(input) }
        let output = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard output >= 0 else { throw BenchError("cannot create \(target): errno \(errno)") }
        defer { close(output) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 4096)
        defer { buffer.deallocate() }
        var copied: Int64 = 0
        while true {
            let count = read(input, buffer.baseAddress, chunkSize)
            guard count >= 0 else { throw BenchError("reading \(source) failed: errno \(errno)") }
            if count == 0 { break }
            try writeAll(output, UnsafeRawBufferPointer(rebasing: buffer[0..<count]), path: target)
            copied += Int64(count)
        }
        if durable, fsync(output) != 0 { throw BenchError("fsync of \(target) failed: errno \(errno)") }
        return copied
    }

    /// Overwrites the first 8 bytes of the file at `path` with `stamp` (little-endian), which
    /// makes it other bytes than before; returns its new `fileChecksum`.
    static func stamp(_ path: String, with stamp: UInt64) throws -> String {
        let fd = open(path, O_WRONLY)
        guard fd >= 0 else { throw BenchError("cannot open \(path): errno \(errno)") }
        defer { close(fd) }
        let written = withUnsafeBytes(of: stamp.littleEndian) { pwrite(fd, $0.baseAddress, $0.count, 0) }
        guard written == 8 else { throw BenchError("stamping \(path) failed: errno \(errno)") }
        return try checksum(of: path)
    }

    /// The SHA-256 of a file as CloudKit's `fileChecksum` (base64).
    static func checksum(of path: String) throws -> String {
        var hasher = SHA256()
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw BenchError("cannot open \(path): errno \(errno)") }
        defer { close(fd) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 4096)
        defer { buffer.deallocate() }
        while true {
            let count = read(fd, buffer.baseAddress, chunkSize)
            guard count >= 0 else { throw BenchError("reading \(path) failed: errno \(errno)") }
            if count == 0 { break }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
        return Data(hasher.finalize()).base64EncodedString()
    }

    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws {
        var offset = 0
        while offset < bytes.count {
            let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            guard written > 0 else {
                if written < 0 && errno == EINTR { continue }
                throw BenchError("writing \(path) failed: errno \(errno)")
            }
            offset += written
        }
    }
}

/// A byte range of a file as an upload's body: buffers of at most
/// ``BenchFiles/bodyChunkSize`` read as the HTTP client asks for them; `sent` counts what it
/// handed out.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    let path: String
    let range: Range<Int64>
    var sent: ByteCounter? = nil

    /// Owns the open file; closes it when the iterator goes away.
    final class Descriptor {
        let fd: Int32
        init(_ fd: Int32) { self.fd = fd }
        deinit { close(fd) }
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let chunks: FileChunks
        var position: Int64
        var descriptor: Descriptor?

        mutating func next() async throws -> ByteBuffer? {
            guard position < chunks.range.upperBound else {
                descriptor = nil
                return nil
            }
            if descriptor == nil {
                let fd = open(chunks.path, O_RDONLY)
                guard fd >= 0 else { throw BenchError("cannot open \(chunks.path): errno \(errno)") }
                descriptor = Descriptor(fd)
            }
            let want = Int(Swift.min(Int64(BenchFiles.bodyChunkSize), chunks.range.upperBound - position))
            var buffer = ByteBufferAllocator().buffer(capacity: want)
            let fd = descriptor!.fd
            let offset = position
            let count = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { raw in
                let count = pread(fd, raw.baseAddress, want, off_t(offset))
                guard count > 0 else { throw BenchError("reading \(chunks.path) at \(offset) failed: errno \(errno)") }
                return count
            }
            position += Int64(count)
            _ = chunks.sent?.add(Int64(count))
            return buffer
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunks: self, position: range.lowerBound) }
}

/// A thread-safe byte count.
final class ByteCounter: Sendable {
    private let value = NIOLockedValueBox<Int64>(0)

    @discardableResult
    func add(_ n: Int64) -> Int64 { value.withLockedValue { $0 += n; return $0 } }

    var total: Int64 { value.withLockedValue { $0 } }
}

/// A file being written from a stream of buffers (a download), without fsync.
struct FileSink: ~Copyable {
    let fd: Int32
    let path: String
    private(set) var written: Int64 = 0

    init(path: String) throws {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw BenchError("cannot create \(path): errno \(errno)") }
        self.path = path
    }

    mutating func write(_ buffer: ByteBuffer) throws {
        try buffer.withUnsafeReadableBytes { try BenchFiles.writeAll(fd, $0, path: path) }
        written += Int64(buffer.readableBytes)
    }

    deinit { close(fd) }
}
