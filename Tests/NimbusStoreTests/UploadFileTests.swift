import Foundation
import NIOCore
import Testing

@testable import NimbusStore

/// An upload's file: written as it arrives, fsynced in the background along the way, and a
/// failed background fsync is not forgotten by the final one.
@Suite("Upload file")
struct UploadFileTests {
    @Test func bytesWrittenAcrossBackgroundSyncsAreTheFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("upload-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let piece = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let pieces = Int(UploadFile.syncStep) / piece.count * 2 + 3
        let file = try UploadFile(path: path, truncate: true)
        for _ in 0..<pieces { try file.append(ByteBuffer(bytes: piece)) }
        try file.synchronize()
        file.close()
        #expect(file.length == Int64(pieces * piece.count))
        let stored = try #require(FileManager.default.contents(atPath: path))
        #expect(stored.count == pieces * piece.count)
        #expect(Array(stored.suffix(piece.count)) == piece)

        // Reopened without truncating, it continues at its end.
        let again = try UploadFile(path: path, truncate: false)
        defer { again.close() }
        #expect(again.length == Int64(pieces * piece.count))
    }

    @Test func aFailedBackgroundSyncIsReportedByTheWait() throws {
        let sync = BackgroundSync()
        #expect(sync.start(-1), "nothing was running")
        #expect(sync.wait() == EBADF)
        // Kept: a later fsync that succeeds does not hide it.
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sync-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fd = open(path, O_WRONLY | O_CREAT, 0o644)
        try #require(fd >= 0)
        defer { close(fd) }
        #expect(sync.start(fd))
        #expect(sync.wait() == EBADF)
        let fresh = BackgroundSync()
        #expect(fresh.start(fd))
        #expect(fresh.wait() == 0)
    }
}
