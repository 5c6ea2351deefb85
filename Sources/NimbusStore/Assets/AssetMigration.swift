import Crypto
import Foundation
import NIOCore

/// Moves asset bytes from one store to another (`nimbus assets migrate --to …`): every blob of
/// the source is copied to the target unless the target already holds it, through an upload
/// at the target whose bytes are hashed on the way and committed only when their SHA-256 is
/// the blob's name; with `deleteSource`, a blob is deleted from the source only once the
/// target holds it with the same length. Nothing is lost whatever step fails, and running it
/// again only finishes what is missing.
public struct AssetMigration: Sendable {
    public let source: any AssetStore
    public let target: any AssetStore

    public init(from source: any AssetStore, to target: any AssetStore) {
        self.source = source
        self.target = target
    }

    /// What a run did.
    public struct Report: Sendable, Equatable {
        /// Blobs copied to the target, and their bytes.
        public var copied = 0
        public var bytes: Int64 = 0
        /// Blobs the target already held.
        public var present = 0
        /// Blobs of the source whose bytes are not what their name says: not copied, kept.
        public var corrupt: [AssetBlobKey] = []
        /// Blobs deleted from the source (with `deleteSource`).
        public var deleted = 0

        public init() {}
    }

    /// Copies (and with `deleteSource`, then deletes) every blob the source holds now.
    /// `progress` hears each blob once it is handled.
    public func run(deleteSource: Bool = false, progress: (AssetBlobKey, Report) -> Void = { _, _ in }) async throws -> Report {
        var report = Report()
        let blobs = try await source.sweepCandidates(olderThan: Int64.max).blobs
        for key in blobs {
            guard let length = try await source.size(of: key) else { continue }
            if try await target.size(of: key) == length {
                report.present += 1
            } else if try await copy(key) {
                report.copied += 1
                report.bytes += length
            } else {
                report.corrupt.append(key)
                progress(key, report)
                continue
            }
            if deleteSource, try await target.size(of: key) == length {
                try await source.deleteBlob(key, writtenBefore: nil)
                report.deleted += 1
            }
            progress(key, report)
        }
        return report
    }

    /// Streams blob `key` into an upload at the target and commits it there when the bytes
    /// hash to its name; `false` (and nothing committed) when they do not.
    func copy(_ key: AssetBlobKey) async throws -> Bool {
        let id = "migrate-" + key.sha256.prefix(32)
        let chunks = BlobChunks(source: source, key: key)
        _ = try await target.appendUpload(id, at: 0, chunks)
        var digest = SHA256()
        try await target.readUpload(id) { buffer in buffer.withUnsafeReadableBytes { digest.update(bufferPointer: $0) } }
        let hex = digest.finalize().map { String(format: "%02x", $0) }.joined()
        guard hex == key.sha256 else {
            try await target.discardUpload(id)
            return false
        }
        try await target.commitUpload(id, as: key)
        return true
    }
}

/// A blob's bytes as the async sequence of buffers an upload takes, read chunk by chunk.
struct BlobChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let source: any AssetStore
    let key: AssetBlobKey

    struct AsyncIterator: AsyncIteratorProtocol {
        let source: any AssetStore
        let key: AssetBlobKey
        var offset: Int64 = 0
        var length: Int64?

        mutating func next() async throws -> ByteBuffer? {
            if length == nil { length = try await source.size(of: key) ?? 0 }
            guard let length, offset < length else { return nil }
            let end = Swift.min(length, offset + Int64(AssetBlobKey.chunkSize))
            var gathered = ByteBuffer()
            try await source.read(key, range: offset..<end) { buffer in
                var buffer = buffer
                gathered.writeBuffer(&buffer)
            }
            guard gathered.readableBytes > 0 else { return nil }
            offset += Int64(gathered.readableBytes)
            return gathered
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(source: source, key: key) }
}
