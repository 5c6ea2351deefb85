import Foundation
import NIOCore
import NimbusProtocol
import Testing

@testable import NimbusStore

/// An upload's file: written as it arrives, fsynced in the background along the way, and a
/// failed background fsync is not forgotten by the final one.
@Suite("Upload file")
struct UploadFileTests {
    @Test func bytesWrittenAcrossBackgroundSyncsAreTheFile() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("upload-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let piece = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let pieces = Int(UploadFile.syncStep) / piece.count * 2 + 3
        // Each piece starts with its number: written by the writer thread, in order.
        func numbered(_ index: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(index).bigEndian, Array.init) + piece.dropFirst(4) }
        let file = try UploadFile(path: path, truncate: true)
        for index in 0..<pieces { try await file.append(ByteBuffer(bytes: numbered(index))) }
        try file.synchronize()
        file.close()
        #expect(file.length == Int64(pieces * piece.count))
        let stored = try #require(FileManager.default.contents(atPath: path))
        #expect(stored.count == pieces * piece.count)
        for index in 0..<pieces where index % 7 == 0 || index == pieces - 1 {
            #expect(Array(stored[index * piece.count..<(index + 1) * piece.count]) == numbered(index))
        }

        // Reopened without truncating, it continues at its end.
        let again = try UploadFile(path: path, truncate: false)
        defer { again.close() }
        #expect(again.length == Int64(pieces * piece.count))
    }

    @Test func aFailedWriteIsReportedAndNothingAfterItIsWritten() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("readonly-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let fd = open(path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        let writes = PipelinedWrites(fd: fd, length: 0, background: BackgroundSync())
        try await writes.enqueue(ByteBuffer(bytes: [1, 2, 3]))
        #expect(writes.drain() == EBADF)
        await #expect(throws: CloudKitError.self) { try await writes.enqueue(ByteBuffer(bytes: [4])) }
        #expect(writes.drain() == EBADF)
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
