import Crypto
import Foundation
import Nimbus
import struct NimbusProtocol.SplitMix64
import NimbusServer
import NimbusTestSupport
import Testing

/// Assets through the SDK against a real server: saved in one call (tokens, upload, modify),
/// fetched with their metadata, downloaded resumably.
@Suite("Assets in the SDK")
struct AssetTests {
    let zone = ZoneID(zoneName: "Photos")

    /// A user's private database with the Photos zone, its asset bytes through `transport`.
    func photos(_ server: LiveServer, transport: (any AssetTransport)? = nil) async throws -> Database {
        let database = try await server.container(user: "ana", assetTransport: transport).privateCloudDatabase
        try await database.save(RecordZone(zoneID: zone))
        return database
    }

    /// Saves a photo record holding `bytes` as an asset; returns the record and its saved asset.
    func savePhoto(_ bytes: Data, in database: Database, files directory: String) async throws -> (Record, Asset) {
        var photo = Record(recordType: "Photo", recordID: Record.ID(recordName: "p1", zoneID: zone))
        photo["image"] = Asset(fileURL: try AssetFiles.write(bytes, in: directory))
        let saved = try await database.save(photo)
        return (photo, try #require(saved["image"] as Asset?))
    }

    @Test func aRecordSavesWithItsFileInOneCallAndDownloadsIntact() async throws {
        try await LiveServer.with { server in
            let database = try await photos(server)
            let bytes = AssetFiles.bytes(300_000, seed: 1)
            let file = try AssetFiles.write(bytes, in: server.directory)

            var photo = Record(recordType: "Photo", recordID: Record.ID(recordName: "p1", zoneID: zone))
            photo["title"] = "Beach"
            photo["image"] = Asset(fileURL: file)
            let uploads = Locked<[TransferProgress]>([])
            let saved = try await database.save(photo) { field, progress in
                #expect(field == "image")
                uploads.withLock { $0.append(progress) }
            }
            #expect(uploads.withLock { $0.last } == TransferProgress(completedBytes: 300_000, totalBytes: 300_000))

            // The saved and the fetched record describe the server's file, not the local one.
            let fetched = try await database.record(for: photo.id)
            for record in [saved, fetched] {
                let asset = try #require(record["image"] as Asset?)
                #expect(asset.fileURL == nil)
                #expect(asset.size == 300_000)
                #expect(asset.fileChecksum == AssetFiles.checksum(bytes))
                #expect(asset.downloadURL != nil)
            }

            let downloads = Locked<[TransferProgress]>([])
            let destination = URL(fileURLWithPath: server.directory).appendingPathComponent("downloaded.bin")
            let asset = try #require(fetched["image"] as Asset?)
            try await database.download(asset, to: destination) { progress in downloads.withLock { $0.append(progress) } }
            #expect(try Data(contentsOf: destination) == bytes)
            #expect(downloads.withLock { $0.last?.fractionCompleted } == 1)
            #expect(!FileManager.default.fileExists(atPath: destination.path + ".partial"))
        }
    }

    @Test func theOperationAPISavesAssetsAndReportsTheirProgress() async throws {
        try await LiveServer.with { server in
            let database = try await photos(server)
            let files = try (0..<3).map { try AssetFiles.write(AssetFiles.bytes(10_000 + $0, seed: UInt64($0)), in: server.directory) }
            let records = files.enumerated().map { index, file in
                var record = Record(recordType: "Photo", recordID: Record.ID(recordName: "p\(index)", zoneID: zone))
                record["image"] = Asset(fileURL: file)
                return record
            }
            let operation = ModifyRecordsOperation(recordsToSave: records)
            operation.database = database
            let finished = Locked<[Record.ID: Int64]>([:])
            operation.perAssetProgressBlock = { id, _, progress in
                if progress.completedBytes == progress.totalBytes { finished.withLock { $0[id] = progress.totalBytes } }
            }
            let (done, signal) = AsyncStream<Result<Void, NimbusError>>.makeStream()
            operation.modifyRecordsResultBlock = { signal.yield($0) }
            OperationQueue().addOperation(operation)
            var iterator = done.makeAsyncIterator()
            let result = try #require(await iterator.next())
            #expect(throws: Never.self) { try result.get() }
            #expect(finished.withLock { $0 } == [records[0].id: 10_000, records[1].id: 10_001, records[2].id: 10_002])
            for (index, record) in records.enumerated() {
                let asset = try #require(try await database.record(for: record.id)["image"] as Asset?)
                #expect(asset.size == Int64(10_000 + index))
            }
        }
    }

    @Test func aMissingFileFailsBeforeAnythingIsSaved() async throws {
        try await LiveServer.with { server in
            let database = try await photos(server)
            var photo = Record(recordType: "Photo", recordID: Record.ID(recordName: "p1", zoneID: zone))
            photo["image"] = Asset(fileURL: URL(fileURLWithPath: server.directory + "/no-such-file.jpg"))
            let error = try await #require(throws: NimbusError.self) { try await database.save(photo) }
            #expect(error.code == .assetFileNotFound)
            let lookup = try await #require(throws: NimbusError.self) { try await database.record(for: photo.id) }
            #expect(lookup.code == .unknownItem)
        }
    }

    @Test func aFileOverTheServersLimitFailsWithLimitExceededAndNothingIsSaved() async throws {
        try await LiveServer.with(configure: { $0.assets.maxAssetBytes = 100_000 }) { server in
            let database = try await photos(server)
            let error = try await #require(throws: NimbusError.self) {
                try await savePhoto(AssetFiles.bytes(300_000, seed: 8), in: database, files: server.directory)
            }
            #expect(error.code == .limitExceeded, "\(error)")
            #expect(error.message.contains("100000"), "\(error)")
            let lookup = try await #require(throws: NimbusError.self) {
                try await database.record(for: Record.ID(recordName: "p1", zoneID: zone))
            }
            #expect(lookup.code == .unknownItem)
        }
    }

    @Test func anAssetOverTheUsersQuotaFailsWithQuotaExceededAndNothingIsSaved() async throws {
        try await LiveServer.with(configure: { $0.userQuotaBytes = 200_000 }) { server in
            let database = try await photos(server)
            let error = try await #require(throws: NimbusError.self) {
                try await savePhoto(AssetFiles.bytes(300_000, seed: 10), in: database, files: server.directory)
            }
            #expect(error.code == .quotaExceeded, "\(error)")
            let lookup = try await #require(throws: NimbusError.self) {
                try await database.record(for: Record.ID(recordName: "p1", zoneID: zone))
            }
            #expect(lookup.code == .unknownItem)
        }
    }

    @Test func anExpiredDownloadURLSaysToFetchTheRecordAgain() async throws {
        try await LiveServer.with(configure: { $0.assets.downloadLifetime = .zero }) { server in
            let database = try await photos(server)
            let (_, asset) = try await savePhoto(AssetFiles.bytes(1_000, seed: 9), in: database, files: server.directory)
            let destination = URL(fileURLWithPath: server.directory).appendingPathComponent("expired.bin")
            let error = try await #require(throws: NimbusError.self) { try await database.download(asset, to: destination) }
            #expect(error.code == .assetNotAvailable, "\(error)")
            #expect(error.message.contains("fetch the record again"))
        }
    }

    @Test func anUploadCutOffHalfWayContinuesFromWhatTheServerHolds() async throws {
        try await LiveServer.with { server in
            let cutting = CuttingAssetTransport(cutUploadsAt: 0.5)
            let database = try await photos(server, transport: cutting)
            let bytes = AssetFiles.bytes(1_000_000, seed: 7)
            let (photo, _) = try await savePhoto(bytes, in: database, files: server.directory)

            // The first request sent half and broke; the second sent only the rest.
            let ranges = cutting.uploadedRanges
            #expect(ranges == [0..<500_000, 500_000..<1_000_000])
            let asset = try #require(try await database.record(for: photo.id)["image"] as Asset?)
            let destination = URL(fileURLWithPath: server.directory).appendingPathComponent("out.bin")
            try await database.download(asset, to: destination)
            #expect(try Data(contentsOf: destination) == bytes)
        }
    }

    @Test func cancellingASaveMidUploadStopsItAndSavesNothing() async throws {
        try await LiveServer.with { server in
            let stalling = CuttingAssetTransport(cutUploadsAt: 0.5, stallInsteadOfBreaking: true)
            let database = try await photos(server, transport: stalling)
            var photo = Record(recordType: "Photo", recordID: Record.ID(recordName: "p1", zoneID: zone))
            photo["image"] = Asset(fileURL: try AssetFiles.write(AssetFiles.bytes(500_000, seed: 11), in: server.directory))
            let record = photo
            let save = Task { try await database.save(record) }
            try await withTimeout("half the upload") { await stalling.waitForStall() }
            save.cancel()
            let error = try await #require(throws: NimbusError.self) { try await save.value }
            #expect(error.code == .operationCancelled)
            let lookup = try await #require(throws: NimbusError.self) { try await database.record(for: photo.id) }
            #expect(lookup.code == .unknownItem)
        }
    }

    @Test func aDownloadContinuesFromAPartialFileWithARangeRequest() async throws {
        try await LiveServer.with { server in
            let counting = CuttingAssetTransport(cutUploadsAt: nil)
            let database = try await photos(server, transport: counting)
            let bytes = AssetFiles.bytes(400_000, seed: 3)
            let (_, asset) = try await savePhoto(bytes, in: database, files: server.directory)

            // An earlier download stopped after 150,000 bytes.
            let destination = URL(fileURLWithPath: server.directory).appendingPathComponent("resumed.bin")
            try bytes.prefix(150_000).write(to: URL(fileURLWithPath: destination.path + ".partial"))
            try await database.download(asset, to: destination)
            #expect(try Data(contentsOf: destination) == bytes)
            #expect(counting.downloadRanges == ["bytes=150000-"])
            #expect(counting.downloadedBytes == 250_000)
        }
    }

    @Test func aCorruptPartialFileIsDetectedAndDownloadedAgain() async throws {
        try await LiveServer.with { server in
            let database = try await photos(server)
            let bytes = AssetFiles.bytes(50_000, seed: 4)
            let (_, asset) = try await savePhoto(bytes, in: database, files: server.directory)
            let destination = URL(fileURLWithPath: server.directory).appendingPathComponent("again.bin")
            try Data(repeating: 0xAB, count: 20_000).write(to: URL(fileURLWithPath: destination.path + ".partial"))
            try await database.download(asset, to: destination)
            #expect(try Data(contentsOf: destination) == bytes)
        }
    }

    @Test func cancellingADownloadStopsItAndKeepsThePartialFile() async throws {
        try await LiveServer.with { server in
            let stalling = CuttingAssetTransport(cutUploadsAt: nil, stallDownloadsAfterFirstChunk: true)
            let database = try await photos(server, transport: stalling)
            let (_, asset) = try await savePhoto(AssetFiles.bytes(2_000_000, seed: 5), in: database, files: server.directory)
            let destination = URL(fileURLWithPath: server.directory).appendingPathComponent("cancelled.bin")
            let download = Task { try await database.download(asset, to: destination) }
            try await withTimeout("the download's first bytes") { await stalling.waitForStall() }
            download.cancel()
            let error = try await #require(throws: NimbusError.self) { try await download.value }
            #expect(error.code == .operationCancelled)
            #expect(!FileManager.default.fileExists(atPath: destination.path))
            #expect(FileManager.default.fileExists(atPath: destination.path + ".partial"))
        }
    }
}

/// Test files of pseudo-random bytes.
enum AssetFiles {
    static func bytes(_ count: Int, seed: UInt64) -> Data {
        var generator = SplitMix64(seed: seed)
        return Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    static func write(_ bytes: Data, in directory: String) throws -> URL {
        let url = URL(fileURLWithPath: directory).appendingPathComponent("asset-\(UUID().uuidString).bin")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try bytes.write(to: url)
        return url
    }

    static func checksum(_ bytes: Data) -> String {
        Data(SHA256.hash(data: bytes)).base64EncodedString()
    }
}

/// The real streaming transport, with faults: cuts the first upload after a fraction of the
/// file (what the server received stays, as when a connection breaks), records the ranges
/// sent and received, and can stall downloads until cancelled.
final class CuttingAssetTransport: AssetTransport {
    private let base = HTTPClientTransport()
    private let cutUploadsAt: Double?
    private let stallDownloads: Bool
    private let state = Locked((uploads: [Range<Int64>](), downloadRanges: [String](), downloaded: Int64(0), cut: false))
    private let (stalled, stall) = AsyncStream<Void>.makeStream()

    private let stallUploads: Bool

    /// - Parameter stallInsteadOfBreaking: the cut upload waits until its task is cancelled
    ///   instead of failing as a broken connection.
    init(cutUploadsAt: Double?, stallDownloadsAfterFirstChunk: Bool = false, stallInsteadOfBreaking: Bool = false) {
        self.cutUploadsAt = cutUploadsAt
        self.stallDownloads = stallDownloadsAfterFirstChunk
        self.stallUploads = stallInsteadOfBreaking
    }

    var uploadedRanges: [Range<Int64>] { state.withLock { $0.uploads } }
    var downloadRanges: [String] { state.withLock { $0.downloadRanges } }
    var downloadedBytes: Int64 { state.withLock { $0.downloaded } }

    func waitForStall() async {
        for await _ in stalled { return }
    }

    func upload(
        _ request: TransportRequest, file: URL, range: Range<Int64>, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> TransportResponse {
        let total = range.upperBound
        let cut = state.withLock { state -> Bool in
            defer { state.cut = true }
            return !state.cut && cutUploadsAt != nil
        }
        if cut, let fraction = cutUploadsAt {
            // Half the file reaches the server (a chunk), then the connection "breaks".
            let end = Int64(Double(total) * fraction)
            var chunk = request
            chunk.method = .put
            chunk.headers["Content-Range"] = "bytes 0-\(end - 1)/\(total)"
            _ = try await base.upload(chunk, file: file, range: 0..<end, progress: progress)
            state.withLock { $0.uploads.append(0..<end) }
            if stallUploads {
                stall.yield()
                // Not a wait on time: the test cancels this upload once `stall` says it is
                // here, and the sleep ends with CancellationError. The hour only stands for
                // "never": were cancellation not to reach it, the test would hang there.
                try await Task.sleep(for: .seconds(3600))
            }
            throw NimbusError(.networkFailure, "injected: the connection broke mid-upload")
        }
        state.withLock { $0.uploads.append(range) }
        return try await base.upload(request, file: file, range: range, progress: progress)
    }

    func download(
        _ request: TransportRequest, into file: URL, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> TransportResponse {
        state.withLock { $0.downloadRanges.append(request.headers["Range"] ?? "") }
        let stall = self.stall
        let stalls = stallDownloads
        let state = self.state
        let response = try await base.download(request, into: file) { written in
            progress(written)
            state.withLock { $0.downloaded = max($0.downloaded, written) }
            if stalls { stall.yield() }
        }
        if stalls {
            // Until cancelled (the first chunk is on disk).
            try await Task.sleep(for: .seconds(3600))
        }
        return response
    }
}
