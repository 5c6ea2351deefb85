import Crypto
import Foundation
import NIOCore
import NimbusProtocol
import NimbusStore
import Testing

/// Moving asset bytes between stores: every blob copied and verified, a corrupt one left
/// where it is, a second run copying nothing again, the source emptied only of what the
/// target holds; and the fallback store a server runs during the move.
@Suite("Asset migration")
struct AssetMigrationTests {
    static let database = DatabaseKey(container: "iCloud.t", environment: .development, scope: .private, owner: "_u")

    /// Two empty file stores in a scratch directory, removed afterwards.
    static func withTwoStores(_ body: (FileAssetStore, FileAssetStore) async throws -> Void) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-migrate-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try await body(
            try FileAssetStore(directory: root + "/old"), try FileAssetStore(directory: root + "/new"))
    }

    /// Stores `bytes` in `store` as the blob named by their hash.
    @discardableResult
    static func put(_ bytes: [UInt8], in store: some AssetStore) async throws -> AssetBlobKey {
        let key = AssetBlobKey(database: database, sha256: SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined())
        let id = "put-" + key.sha256.prefix(20)
        _ = try await store.appendUpload(id, at: 0, AsyncStream(ByteBuffer.self) { $0.yield(ByteBuffer(bytes: bytes)); $0.finish() })
        try await store.commitUpload(id, as: key)
        return key
    }

    static func bytes(of key: AssetBlobKey, in store: some AssetStore) async throws -> [UInt8] {
        var out: [UInt8] = []
        try await store.read(key, range: 0..<Int64.max) { out += $0.readableBytesView }
        return out
    }

    @Test func copiesVerifiesAndIsIdempotent() async throws {
        try await Self.withTwoStores { old, new in
            let big = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 * 7 + ($0 >> 11)) }
            let keys = [try await Self.put(big, in: old), try await Self.put(Array("small".utf8), in: old)]
            // A blob whose bytes are not what its name says (a disk error, a hand edit).
            let corrupt = AssetBlobKey(database: Self.database, sha256: String(repeating: "0", count: 64))
            _ = try await old.appendUpload("bad", at: 0, AsyncStream(ByteBuffer.self) { $0.yield(ByteBuffer(string: "nope")); $0.finish() })
            try await old.commitUpload("bad", as: corrupt)

            let first = try await AssetMigration(from: old, to: new).run()
            #expect(first.copied == 2)
            #expect(first.bytes == 3_000_005)
            #expect(first.corrupt == [corrupt])
            #expect(try await Self.bytes(of: keys[0], in: new) == big)
            #expect(try await new.size(of: corrupt) == nil)
            #expect(try await new.sweepCandidates(olderThan: Int64.max).uploads.isEmpty, "no upload left behind")

            let again = try await AssetMigration(from: old, to: new).run(deleteSource: true)
            #expect(again.copied == 0)
            #expect(again.present == 2)
            #expect(again.deleted == 2)
            #expect(try await old.size(of: keys[0]) == nil)
            #expect(try await old.size(of: corrupt) == 4, "a corrupt blob stays at the source")
        }
    }

    @Test func theFallbackStoreWritesToTheNewAndReadsWhatOnlyTheOldHolds() async throws {
        try await Self.withTwoStores { old, new in
            let before = try await Self.put(Array("before the move".utf8), in: old)
            let moving = FallbackAssetStore(primary: new, previous: old)
            let after = try await Self.put(Array("after the move".utf8), in: moving)
            #expect(try await old.size(of: after) == nil)
            #expect(try await Self.bytes(of: after, in: new) == Array("after the move".utf8))
            #expect(try await moving.size(of: before) == 15)
            #expect(try await Self.bytes(of: before, in: moving) == Array("before the move".utf8))
            #expect(try moving.redirectURL(for: before, lifetime: .seconds(60)) == nil)
            #expect(Set(try await moving.sweepCandidates(olderThan: Int64.max).blobs) == [before, after])
            try await moving.deleteBlob(before, writtenBefore: nil)
            #expect(try await moving.size(of: before) == nil)
        }
    }
}
