import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NimbusObjectStore
import NimbusProtocol
import NimbusStore
import NimbusTestSupport
import Testing

/// The S3 asset store through the `AssetStore` seam, against a real S3-compatible server
/// (`NIMBUS_TEST_S3_URL`; `scripts/throwaway-s3.sh` starts moto's): segments, resumption,
/// multipart commits, ranges, the collector's view, pre-signed URLs.
@Suite("S3 asset store", .enabled(if: TestObjectStore.enabled, TestObjectStore.howTo))
struct S3AssetStoreTests {
    static func store() throws -> S3AssetStore {
        try S3AssetStore(
            location: TestObjectStore.fresh(),
            credentials: AWSCredentials.fromEnvironment(ProcessInfo.processInfo.environment))
    }

    static let key = AssetBlobKey(
        database: DatabaseKey(container: "iCloud.t", environment: .development, scope: .private, owner: "_u"),
        sha256: String(repeating: "ab", count: 32))

    static func bytes(_ count: Int, seed: Int = 3) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ seed &+ ($0 >> 9)) }
    }

    /// `bytes` in buffers of `piece`, then `failure` (a dropped connection) if given.
    static func body(_ bytes: ArraySlice<UInt8>, piece: Int = 64 * 1024, failing: Bool = false)
        -> AsyncThrowingStream<ByteBuffer, any Error>
    {
        AsyncThrowingStream { continuation in
            var index = bytes.startIndex
            while index < bytes.endIndex {
                let end = min(index + piece, bytes.endIndex)
                continuation.yield(ByteBuffer(bytes: bytes[index..<end]))
                index = end
            }
            if failing { continuation.finish(throwing: CancellationError()) } else { continuation.finish() }
        }
    }

    static func read(_ store: S3AssetStore, _ key: AssetBlobKey, _ range: Range<Int64>) async throws -> [UInt8] {
        var out: [UInt8] = []
        try await store.read(key, range: range) { buffer in
            #expect(buffer.readableBytes <= AssetBlobKey.chunkSize)
            out += buffer.readableBytesView
        }
        return out
    }

    @Test func anInterruptedUploadResumesAndCommitsAsOneObject() async throws {
        let store = try Self.store()
        let bytes = Self.bytes(12_000_000)
        let cut = S3AssetStore.segmentBytes + 123_457
        // A connection that drops after one full segment and a bit: every byte stays.
        await #expect(throws: CancellationError.self) {
            _ = try await store.appendUpload("up-1", at: 0, Self.body(bytes[..<cut], failing: true))
        }
        #expect(try await store.uploadedLength("up-1") == Int64(cut))
        await #expect(throws: CloudKitError.self) {
            _ = try await store.appendUpload("up-1", at: 5, Self.body(bytes[5...]))
        }
        #expect(try await store.appendUpload("up-1", at: Int64(cut), Self.body(bytes[cut...])) == 12_000_000)
        var again: [UInt8] = []
        try await store.readUpload("up-1") { again += $0.readableBytesView }
        #expect(again == bytes)

        let key = try #require(AssetBlobKey("\(Self.key.database)/\(SHA256.hash(data: bytes).hexDigits)"))
        try await store.commitUpload("up-1", as: key)
        #expect(try await store.uploadedLength("up-1") == 0)
        #expect(try await store.size(of: key) == 12_000_000)
        #expect(try await Self.read(store, key, 0..<12_000_000) == bytes)
        let across = Int64(S3AssetStore.segmentBytes - 10)..<Int64(S3AssetStore.segmentBytes + 10)
        #expect(try await Self.read(store, key, across) == Array(bytes[Int(across.lowerBound)..<Int(across.upperBound)]))
    }

    @Test func smallAndEmptyUploadsCommitAndTheCollectorSeesThem() async throws {
        let store = try Self.store()
        let small = Self.bytes(70_000, seed: 9)
        #expect(try await store.appendUpload("small", at: 0, Self.body(small[...])) == 70_000)
        try await store.commitUpload("small", as: Self.key)
        #expect(try await Self.read(store, Self.key, 0..<70_000) == small)
        let empty = try #require(AssetBlobKey("\(Self.key.database)/" + String(repeating: "cd", count: 32)))
        #expect(try await store.appendUpload("empty", at: 0, Self.body([UInt8]()[...])) == 0)
        try await store.commitUpload("empty", as: empty)
        #expect(try await store.size(of: empty) == 0)

        #expect(try await store.appendUpload("left", at: 0, Self.body(small[..<1000])) == 1000)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let later = try await store.sweepCandidates(olderThan: now + 3_600_000)
        #expect(Set(later.blobs) == [Self.key, empty])
        #expect(later.uploads == ["left"])
        #expect(try await store.sweepCandidates(olderThan: now - 3_600_000) == AssetSweepCandidates())

        // Written after the cutoff: kept; without one: deleted.
        try await store.deleteBlob(Self.key, writtenBefore: now - 3_600_000)
        #expect(try await store.size(of: Self.key) == 70_000)
        try await store.deleteBlob(Self.key, writtenBefore: nil)
        #expect(try await store.size(of: Self.key) == nil)
        await #expect(throws: CloudKitError.self) { _ = try await Self.read(store, Self.key, 0..<10) }
        try await store.discardUpload("left")
        #expect(try await store.uploadedLength("left") == 0)
        await #expect(throws: CloudKitError.self) { _ = try await store.uploadedLength("../etc") }
    }

    @Test func aPresignedURLServesTheBlobWithoutCredentials() async throws {
        let store = try Self.store()
        let bytes = Self.bytes(300_000, seed: 5)
        _ = try await store.appendUpload("signed", at: 0, Self.body(bytes[...]))
        try await store.commitUpload("signed", as: Self.key)
        let url = try #require(try store.redirectURL(for: Self.key, lifetime: .seconds(60)))
        #expect(url.contains("X-Amz-Signature=") && url.contains("X-Amz-Expires=60"))
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Range", value: "bytes=100-199")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        #expect(response.status == .partialContent)
        #expect(Array(try await response.body.collect(upTo: 1 << 20).readableBytesView) == Array(bytes[100..<200]))
    }

    /// The test server checks every signature (scripts/s3-test-server.py): a wrong secret is
    /// refused, so the other cases' requests were signed right.
    @Test func aWrongSecretIsRefusedWithTheStoresReason() async throws {
        let honest = try AWSCredentials.fromEnvironment(ProcessInfo.processInfo.environment)
        let forged = try S3AssetStore(
            location: TestObjectStore.fresh(),
            credentials: AWSCredentials(accessKeyID: honest.accessKeyID, secretAccessKey: "not-the-secret"))
        let error = try await #require(throws: ObjectStoreError.self) { _ = try await forged.size(of: Self.key) }
        #expect(error.status == 403 || error.status == 400, "\(error)")
        let listing = try await #require(throws: ObjectStoreError.self) { _ = try await forged.uploadedLength("x") }
        #expect(listing.description.contains("SignatureDoesNotMatch"), "\(listing)")
    }

    @Test func blobsMigrateFromADirectoryToTheBucketAndBack() async throws {
        let s3 = try Self.store()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-s3-migrate-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let files = try FileAssetStore(directory: root)
        let bytes = Self.bytes(6_000_000, seed: 4)
        let key = try #require(AssetBlobKey("\(Self.key.database)/\(SHA256.hash(data: bytes).hexDigits)"))
        _ = try await files.appendUpload("one", at: 0, Self.body(bytes[...]))
        try await files.commitUpload("one", as: key)

        let there = try await AssetMigration(from: files, to: s3).run()
        #expect(there.copied == 1 && there.bytes == 6_000_000)
        #expect(try await Self.read(s3, key, 0..<6_000_000) == bytes)
        #expect(try await AssetMigration(from: files, to: s3).run(deleteSource: true).present == 1)
        #expect(try await files.size(of: key) == nil)

        let back = try await AssetMigration(from: s3, to: files).run()
        #expect(back.copied == 1)
        var read: [UInt8] = []
        try await files.read(key, range: 0..<Int64.max) { read += $0.readableBytesView }
        #expect(read == bytes)
    }
}

extension Digest {
    var hexDigits: String { map { String(format: "%02x", $0) }.joined() }
}
