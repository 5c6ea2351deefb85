import PostgresNIO
import Testing

@testable import NimbusPostgres

/// How an upload's buffers become `asset_chunks` rows: whole chunks in order, the rest as a
/// last chunk, even when the body fails; nothing after an insert that failed.
@Suite("Chunked upload")
struct ChunkedUploadTests {
    struct BodyFailed: Error {}
    struct InsertFailed: Error {}

    /// The inserts `ChunkedUpload` made: each chunk's start and bytes.
    actor Inserts {
        var rows: [(start: Int64, bytes: [UInt8])] = []
        var starts: [Int64] { rows.map(\.start) }
        var bytes: [UInt8] { rows.flatMap(\.bytes) }
        func add(_ start: Int64, _ chunk: ByteBuffer) { rows.append((start, Array(chunk.readableBytesView))) }
    }

    /// `bytes` as a request body of `piece`-byte buffers, failing after them when `fail`.
    func body(_ bytes: [UInt8], piece: Int, fail: Bool = false) -> AsyncThrowingStream<ByteBuffer, any Error> {
        AsyncThrowingStream { continuation in
            for start in stride(from: 0, to: bytes.count, by: piece) {
                continuation.yield(ByteBuffer(bytes: bytes[start..<min(start + piece, bytes.count)]))
            }
            continuation.finish(throwing: fail ? BodyFailed() : nil)
        }
    }

    /// A chunk size that no buffer size below divides.
    let chunk = 100_000

    func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) } }

    @Test func buffersBecomeWholeChunksInOrderThenTheRest() async throws {
        let bytes = pattern(2 * chunk + 30_000)
        let inserts = Inserts()
        let end = try await ChunkedUpload.store(body(bytes, piece: 6_500), from: 500, chunkSize: chunk) { start, row in
            await inserts.add(start, row)
        }
        let size = Int64(chunk)
        #expect(end == 500 + Int64(bytes.count))
        #expect(await inserts.starts == [500, 500 + size, 500 + 2 * size])
        #expect(await inserts.bytes == bytes)
    }

    @Test func aFailedBodyStillStoresEverythingThatArrived() async throws {
        let bytes = pattern(chunk + 12_345)
        let inserts = Inserts()
        await #expect(throws: BodyFailed.self) {
            _ = try await ChunkedUpload.store(body(bytes, piece: 9_000, fail: true), from: 0, chunkSize: chunk) { start, row in
                await inserts.add(start, row)
            }
        }
        #expect(await inserts.starts == [0, Int64(chunk)])
        #expect(await inserts.bytes == bytes)
    }

    @Test func nothingIsStoredAfterAFailedInsert() async throws {
        let bytes = pattern(4 * chunk)
        let inserts = Inserts()
        await #expect(throws: InsertFailed.self) {
            _ = try await ChunkedUpload.store(body(bytes, piece: 7_000), from: 0, chunkSize: chunk) { start, row in
                if start == Int64(chunk) { throw InsertFailed() }
                await inserts.add(start, row)
            }
        }
        #expect(await inserts.starts == [0], "only the chunk before the failed one")
        #expect(await inserts.bytes == Array(bytes[0..<chunk]))
    }
}
