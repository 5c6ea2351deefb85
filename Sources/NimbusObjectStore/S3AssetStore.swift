import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NimbusProtocol
import NimbusStore

/// Asset bytes as objects in an S3-compatible bucket (AWS S3, MinIO, Cloudflare R2, Garage…),
/// which every node of a deployment reaches: `PREFIX/blobs/<database>/<sha256>` for committed
/// blobs, `PREFIX/uploads/<id>/<first byte, 16 digits>` for the segments of an upload in
/// progress.
///
/// Nothing holds a whole asset in memory. An upload is gathered into segments of
/// ``segmentBytes`` (S3's smallest multipart part), each stored by its own `PUT` as soon as it
/// is full; when the request ends early, what arrived is stored as a shorter last segment, which
/// a resumed upload reads back and extends (every segment but the last is full). Committing
/// copies the segments into the blob inside the store: one `CopyObject`, or a multipart upload
/// of `UploadPartCopy`s for a file of several segments; then the segments are deleted.
/// Downloads stream the object's bytes (a `Range` read for a range), or, where the operator
/// allows it, redirect to a pre-signed URL (``redirectURL(for:lifetime:)``).
///
/// Requests are signed with SigV4 (``SigV4Signer``) and sent by AsyncHTTPClient. Object keys
/// come from upload ids and content hashes the server made, never from a client.
public struct S3AssetStore: AssetStore {
    let client: S3Client
    /// The bytes of every upload segment but the last: 5 MiB, S3's smallest multipart part.
    public static let segmentBytes = 5 << 20

    /// Reaches `location` with `credentials` through `http`; `clock` stamps signatures.
    public init(
        location: ObjectStoreLocation, credentials: AWSCredentials, http: HTTPClient = .shared, clock: WallClock = .system
    ) throws {
        client = try S3Client(location: location, credentials: credentials, http: http, clock: clock)
    }

    /// The location's prefix with a trailing `/` (empty for the bucket's root).
    var root: String { client.location.prefix.isEmpty ? "" : client.location.prefix + "/" }

    func blobKey(_ key: AssetBlobKey) -> String { "\(root)blobs/\(key.database)/\(key.sha256)" }

    func uploadFolder(_ id: String) throws -> String {
        guard !id.isEmpty, id.count <= 128, id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") })
        else { throw CloudKitError(.badRequest, "'\(id)' is not an upload id") }
        return "\(root)uploads/\(id)/"
    }

    func segmentKey(_ folder: String, start: Int64) -> String { folder + String(format: "%016lld", start) }

    /// Upload `id`'s segments in order, checked to follow each other from byte 0.
    func segments(_ id: String) async throws -> [(start: Int64, object: S3Object)] {
        let folder = try uploadFolder(id)
        var found: [(start: Int64, object: S3Object)] = []
        for object in try await client.list(prefix: folder) {
            guard let start = Int64(object.key.dropFirst(folder.count)) else { continue }
            found.append((start, object))
        }
        found.sort { $0.start < $1.start }
        var next: Int64 = 0
        for segment in found {
            guard segment.start == next else {
                throw CloudKitError(.internalError, "upload \(id)'s stored segments do not follow each other at byte \(next)")
            }
            next += segment.object.size
        }
        return found
    }

    public func uploadedLength(_ id: String) async throws -> Int64 {
        try await segments(id).last.map { $0.start + $0.object.size } ?? 0
    }

    /// A failure of the object store (an ``ObjectStoreError``: the body's own failures never
    /// are one) is the server's, not the client's: `TRY_AGAIN_LATER`, the bytes stored before it
    /// kept for a resume, never the "body ended early" `BAD_REQUEST` a failed request body gets.
    public func appendUpload<Chunks: AsyncSequence>(_ id: String, at offset: Int64, _ chunks: Chunks) async throws -> Int64
    where Chunks.Element == ByteBuffer {
        do {
            return try await appendSegments(id, at: offset, chunks)
        } catch let error as ObjectStoreError {
            throw CloudKitError(
                .tryAgainLater,
                "the server's object store did not take upload \(id)'s bytes (\(error.message)); GET the upload URL for "
                    + "the bytes it holds and send the rest, or POST the file again")
        }
    }

    private func appendSegments<Chunks: AsyncSequence>(_ id: String, at offset: Int64, _ chunks: Chunks) async throws -> Int64
    where Chunks.Element == ByteBuffer {
        let folder = try uploadFolder(id)
        var start = offset
        var pending = ByteBuffer()
        if offset == 0 {
            try await discardUpload(id)
        } else {
            let held = try await segments(id)
            let length = held.last.map { $0.start + $0.object.size } ?? 0
            guard length == offset else {
                throw CloudKitError(.badRequest, "upload \(id) holds \(length) bytes; continue at that offset (or 0), not \(offset)")
            }
            // A short last segment is extended: read it back, store it again longer.
            if let last = held.last, last.object.size < Self.segmentBytes {
                start = last.start
                try await readObject(last.object.key, range: 0..<last.object.size) { pending.writeImmutableBuffer($0) }
                // A store that answers other than the bytes asked for must not size the next slice.
                guard pending.readableBytes == Int(last.object.size) else {
                    throw CloudKitError(
                        .internalError,
                        "the object store gave \(pending.readableBytes) bytes of upload \(id)'s last segment, not \(last.object.size)")
                }
            }
        }
        // The bytes at the front of `pending` already stored (the short segment read back).
        var stored = pending.readableBytes
        do {
            for try await var chunk in chunks {
                while chunk.readableBytes > 0 {
                    var slice = chunk.readSlice(length: min(chunk.readableBytes, Self.segmentBytes - pending.readableBytes))!
                    pending.writeBuffer(&slice)
                    if pending.readableBytes == Self.segmentBytes {
                        try await client.call(.PUT, segmentKey(folder, start: start), body: pending)
                        start += Int64(pending.readableBytes)
                        pending = ByteBuffer()
                        stored = 0
                    }
                }
            }
        } catch {
            // Every byte that arrived stays, as a shorter last segment the client resumes after.
            if pending.readableBytes > stored {
                _ = try? await client.call(.PUT, segmentKey(folder, start: start), body: pending)
            }
            throw error
        }
        if pending.readableBytes > stored {
            try await client.call(.PUT, segmentKey(folder, start: start), body: pending)
        }
        return start + Int64(pending.readableBytes)
    }

    public func readUpload(_ id: String, _ body: (ByteBuffer) async throws -> Void) async throws {
        for segment in try await segments(id) {
            try await readObject(segment.object.key, range: 0..<segment.object.size, body)
        }
    }

    public func commitUpload(_ id: String, as key: AssetBlobKey) async throws {
        let parts = try await segments(id)
        let target = blobKey(key)
        switch parts.count {
        case 0:
            try await client.call(.PUT, target, body: ByteBuffer())
        case 1:
            let copied = try await client.call(.PUT, target, headers: [("x-amz-copy-source", copySource(parts[0].object.key))])
            // A copy may fail after its 200: the error is in the body.
            if copied.text.contains("<Error>") {
                throw ObjectStoreError("the object store could not copy the upload: \(S3XML.values("Code", in: copied.text).first ?? "")")
            }
        default:
            try await copyMultipart(parts.map(\.object.key), to: target)
        }
        for part in parts { try await client.call(.DELETE, part.object.key, accepting: [404]) }
    }

    /// `x-amz-copy-source` naming object `key` of this bucket.
    func copySource(_ key: String) -> String {
        "/\(client.location.bucket)/" + SigV4Signer.uriEncode(key, keepSlash: true)
    }

    /// One object made of `sources`, in order, by a multipart upload of part copies (each
    /// source but the last is at least 5 MiB, as S3 wants parts), aborted when a step fails.
    func copyMultipart(_ sources: [String], to target: String) async throws {
        let created = try await client.text(.POST, target, query: [("uploads", "")])
        guard let uploadID = S3XML.values("UploadId", in: created).first else {
            throw ObjectStoreError("the object store started a multipart upload without an UploadId")
        }
        do {
            var completion = "<CompleteMultipartUpload>"
            for (index, source) in sources.enumerated() {
                let answer = try await client.text(
                    .PUT, target, query: [("partNumber", String(index + 1)), ("uploadId", uploadID)],
                    headers: [("x-amz-copy-source", copySource(source))])
                guard let etag = S3XML.values("ETag", in: answer).first else {
                    throw ObjectStoreError("the object store copied part \(index + 1) without an ETag")
                }
                completion += "<Part><PartNumber>\(index + 1)</PartNumber><ETag>\(S3XML.escape(etag))</ETag></Part>"
            }
            completion += "</CompleteMultipartUpload>"
            let done = try await client.text(.POST, target, query: [("uploadId", uploadID)], body: ByteBuffer(string: completion))
            // CompleteMultipartUpload may fail after its 200, as a copy may: the error is in the body.
            if let code = S3XML.values("Code", in: done).first, done.contains("<Error>") {
                throw ObjectStoreError("the object store could not complete the multipart upload: \(code)")
            }
        } catch {
            _ = try? await client.call(.DELETE, target, query: [("uploadId", uploadID)], accepting: [404])
            throw error
        }
    }

    public func discardUpload(_ id: String) async throws {
        for object in try await client.list(prefix: try uploadFolder(id)) {
            try await client.call(.DELETE, object.key, accepting: [404])
        }
    }

    public func size(of key: AssetBlobKey) async throws -> Int64? {
        let head = try await client.call(.HEAD, blobKey(key), accepting: [404])
        guard head.status == 200 else { return nil }
        return head.headers.first(name: "content-length").flatMap { Int64($0) }
    }

    public func read(_ key: AssetBlobKey, range: Range<Int64>, _ body: (ByteBuffer) async throws -> Void) async throws {
        try await readObject(blobKey(key), range: range, body)
    }

    /// Streams `range` of object `key` to `body` in buffers of at most ``AssetBlobKey/chunkSize``.
    func readObject(_ key: String, range: Range<Int64>, _ body: (ByteBuffer) async throws -> Void) async throws {
        guard !range.isEmpty else { return }
        let last = range.upperBound == Int64.max ? "" : String(range.upperBound - 1)
        let response = try await client.send(
            .GET, key, headers: [("range", "bytes=\(range.lowerBound)-\(last)")], accepting: [404, 416])
        switch response.status.code {
        case 404: throw CloudKitError(.notFound, "the asset's bytes are no longer stored")
        case 416: return
        default: break
        }
        for try await var buffer in response.body {
            while buffer.readableBytes > AssetBlobKey.chunkSize {
                try await body(buffer.readSlice(length: AssetBlobKey.chunkSize)!)
            }
            if buffer.readableBytes > 0 { try await body(buffer) }
        }
    }

    public func deleteBlob(_ key: AssetBlobKey, writtenBefore cutoff: Int64?) async throws {
        let object = blobKey(key)
        if let cutoff {
            let head = try await client.call(.HEAD, object, accepting: [404])
            guard head.status == 200 else { return }
            let modified = head.headers.first(name: "last-modified").flatMap(S3Time.httpDateMillis) ?? Int64.max
            guard modified < cutoff else { return }
        }
        try await client.call(.DELETE, object, accepting: [404])
    }

    public func sweepCandidates(olderThan cutoff: Int64) async throws -> AssetSweepCandidates {
        var found = AssetSweepCandidates()
        let blobs = "\(root)blobs/"
        for object in try await client.list(prefix: blobs) where object.modified < cutoff {
            if let key = AssetBlobKey(String(object.key.dropFirst(blobs.count))) { found.blobs.append(key) }
        }
        let uploads = "\(root)uploads/"
        var newest: [String: Int64] = [:]
        for object in try await client.list(prefix: uploads) {
            guard let id = object.key.dropFirst(uploads.count).split(separator: "/").first else { continue }
            newest[String(id)] = max(newest[String(id)] ?? 0, object.modified)
        }
        found.uploads = newest.filter { $0.value < cutoff }.map(\.key).sorted()
        return found
    }

    public func redirectURL(for key: AssetBlobKey, lifetime: Duration) throws -> String? {
        client.presignedGET(blobKey(key), seconds: Int(lifetime.components.seconds))
    }
}
