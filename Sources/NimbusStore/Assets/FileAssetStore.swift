import Foundation
import NIOCore
import NimbusProtocol

/// Asset bytes as files under a directory (`DIR/assets` in SQLite mode, or a directory every
/// node mounts): `blobs/<database>/<sha256>` for committed blobs, `uploads/<id>` for uploads
/// in progress.
///
/// A blob only appears by a rename of a finished upload (atomic within one file system), so
/// a reader never sees a partial blob; a crash leaves at most an upload file or a blob no
/// row knows, both reclaimed by the collector after the grace period (their modification
/// time tells their age). Files are read and written with blocking calls in chunks of
/// ``AssetBlobKey/chunkSize`` at most (reads of a quarter of it), one chunk per call.
public struct FileAssetStore: AssetStore {
    public let directory: URL
    /// The bytes a read hands on at a time: a quarter of ``AssetBlobKey/chunkSize``, below
    /// the mmap threshold `nimbus serve` sets (4 MiB), so each buffer is heap memory reused
    /// rather than an mmap zero-filled and unmapped again per chunk.
    static let readSize = AssetBlobKey.chunkSize / 4

    /// Keeps blobs under `directory`, creating it.
    public init(directory: String) throws {
        self.directory = URL(fileURLWithPath: directory, isDirectory: true)
        for sub in ["blobs", "uploads"] {
            try FileManager.default.createDirectory(
                at: self.directory.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
    }

    func uploadPath(_ id: String) throws -> String {
        guard !id.isEmpty, id.count <= 128, id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") })
        else { throw CloudKitError(.badRequest, "'\(id)' is not an upload id") }
        return directory.appendingPathComponent("uploads").appendingPathComponent(id).path
    }

    func blobPath(_ key: AssetBlobKey) -> String {
        directory.appendingPathComponent("blobs").appendingPathComponent(key.database)
            .appendingPathComponent(key.sha256).path
    }

    public func uploadedLength(_ id: String) async throws -> Int64 {
        let path = try uploadPath(id)
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return 0 }
        return (attributes[.size] as? NSNumber)?.int64Value ?? 0
    }

    public func appendUpload<Chunks: AsyncSequence>(_ id: String, at offset: Int64, _ chunks: Chunks) async throws
        -> Int64
    where Chunks.Element == ByteBuffer {
        let path = try uploadPath(id)
        if offset == 0 || !FileManager.default.fileExists(atPath: path) {
            guard offset == 0 else {
                throw CloudKitError(.badRequest, "upload \(id) holds 0 bytes; continue at offset 0, not \(offset)")
            }
        }
        let file = try UploadFile(path: path, truncate: offset == 0)
        defer { file.close() }
        guard file.length == offset else {
            throw CloudKitError(
                .badRequest, "upload \(id) holds \(file.length) bytes; continue at that offset (or 0), not \(offset)")
        }
        do {
            for try await chunk in chunks { try await file.append(chunk) }
        } catch {
            // What arrived before the failure stays: written, then the error.
            try? file.drain()
            throw error
        }
        try file.synchronize()
        return file.length
    }

    public func readUpload(_ id: String, _ body: (ByteBuffer) async throws -> Void) async throws {
        let path = try uploadPath(id)
        try await Self.read(path: path, range: 0..<Int64.max, body)
    }

    public func commitUpload(_ id: String, as key: AssetBlobKey) async throws {
        let source = try uploadPath(id)
        let target = blobPath(key)
        try FileManager.default.createDirectory(
            atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        // rename(2) replaces an existing blob of the same content atomically, with a fresh
        // modification time: the collector's grace period starts again.
        guard rename(source, target) == 0 else {
            throw CloudKitError(.internalError, "the server could not store the upload (rename: errno \(errno))")
        }
        // The rename itself reaches the disk before the upload is recorded.
        let folder = open((target as NSString).deletingLastPathComponent, O_RDONLY)
        if folder >= 0 {
            _ = fsync(folder)
            _ = close(folder)
        }
    }

    public func discardUpload(_ id: String) async throws {
        let path = try uploadPath(id)
        if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
    }

    public func size(of key: AssetBlobKey) async throws -> Int64? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: blobPath(key)) else { return nil }
        return (attributes[.size] as? NSNumber)?.int64Value
    }

    public func read(_ key: AssetBlobKey, range: Range<Int64>, _ body: (ByteBuffer) async throws -> Void) async throws {
        try await Self.read(path: blobPath(key), range: range, body)
    }

    static func read(path: String, range: Range<Int64>, _ body: (ByteBuffer) async throws -> Void) async throws {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw CloudKitError(.notFound, "the asset's bytes are no longer stored") }
        defer { close(fd) }
        var position = range.lowerBound
        // pread straight into the buffer the server writes to the socket. The buffer is
        // reused once the socket has taken it (`clear` keeps storage nobody else holds), and
        // stays under glibc's mmap threshold, so a download does not map and zero-fill fresh
        // pages per chunk.
        var buffer = ByteBufferAllocator().buffer(capacity: Self.readSize)
        while position < range.upperBound {
            let count = Int(min(range.upperBound - position, Int64(Self.readSize)))
            buffer.clear(minimumCapacity: count)
            let offset = position
            var failed: Int32 = 0
            let got = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
                let got = pread(fd, raw.baseAddress, count, off_t(offset))
                if got < 0 { failed = errno }
                return max(0, got)
            }
            guard failed == 0 else {
                throw CloudKitError(.internalError, "the server could not read the asset's bytes (errno \(failed))")
            }
            if got == 0 { break }
            position += Int64(got)
            try await body(buffer)
        }
    }

    public func deleteBlob(_ key: AssetBlobKey, writtenBefore cutoff: Int64?) async throws {
        let path = blobPath(key)
        guard FileManager.default.fileExists(atPath: path) else { return }
        if let cutoff, !Self.modified(path, before: cutoff) { return }
        try FileManager.default.removeItem(atPath: path)
    }

    /// Whether the file at `path` was last modified before `cutoff` (milliseconds).
    static func modified(_ path: String, before cutoff: Int64) -> Bool {
        guard let date = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date else {
            return false
        }
        return Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) < cutoff
    }

    public func sweepCandidates(olderThan cutoff: Int64) async throws -> AssetSweepCandidates {
        let manager = FileManager.default
        func old(_ path: String) -> Bool { Self.modified(path, before: cutoff) }
        var found = AssetSweepCandidates()
        let blobs = directory.appendingPathComponent("blobs")
        for database in (try? manager.contentsOfDirectory(atPath: blobs.path)) ?? [] {
            let folder = blobs.appendingPathComponent(database)
            for name in (try? manager.contentsOfDirectory(atPath: folder.path)) ?? [] {
                let path = folder.appendingPathComponent(name).path
                if let key = AssetBlobKey("\(database)/\(name)"), old(path) { found.blobs.append(key) }
            }
        }
        let uploads = directory.appendingPathComponent("uploads")
        for name in (try? manager.contentsOfDirectory(atPath: uploads.path)) ?? [] {
            if old(uploads.appendingPathComponent(name).path) { found.uploads.append(name) }
        }
        return found
    }
}
