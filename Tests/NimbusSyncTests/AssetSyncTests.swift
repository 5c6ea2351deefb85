import Foundation
import NIOConcurrencyHelpers
import Nimbus
import NimbusProtocol
import NimbusServer
import NimbusSync
import NimbusTestSupport
import Testing

/// Assets through the sync engine against a real server: records first, bytes lazily;
/// uploads in the outbox with the record that owns them.
@Suite("Sync engine assets")
struct AssetSyncTests {
    static let configuration = SyncConfiguration(zones: ["Photos"], subscriptionID: nil)

    /// Devices A and B of one user, started; B runs `configuration`, and its service counts calls.
    func devices(
        _ harness: SyncHarness, b configuration: SyncConfiguration = Self.configuration
    ) async throws -> (a: SyncEngine, b: SyncEngine, bService: FaultyService) {
        let (a, _) = try harness.engine("A", configuration: Self.configuration)
        let (b, bService) = try harness.engine("B", configuration: configuration)
        try await a.start()
        try await b.start()
        return (a, b, bService)
    }

    func photo(_ name: String, file: URL) -> LocalRecord {
        LocalRecord(
            zoneName: "Photos", recordName: name, recordType: "Photo",
            fields: ["title": .string(name), "image": Nimbus.Asset(fileURL: file).fieldValue])
    }

    @Test func recordsArriveFirstAndTheirBytesOnlyWhenAskedFor() async throws {
        try await SyncHarness.with { harness in
            let (a, b, bService) = try await devices(harness)
            let bytes = TestBytes.make(200_000, seed: 1)
            let file = try TestBytes.write(bytes, in: harness.directory)
            try a.store.write { _, outbox in try outbox.save(photo("p1", file: file)) }
            try await a.sendChanges()
            #expect(try a.store.pendingCount() == 0)

            try await b.fetchChanges()
            let record = try #require(try b.store.record(zone: "Photos", name: "p1"))
            let asset = try #require(record.fields["image"].flatMap(Nimbus.Asset.init(fieldValue:)))
            #expect(asset.size == 200_000)
            #expect(asset.fileChecksum != nil)
            #expect(bService.calls("downloadAsset") == 0)

            let local = try #require(try await b.assetFile(for: record, field: "image"))
            #expect(try Data(contentsOf: local) == bytes)
            // Cached: asked again, nothing is downloaded.
            #expect(try await b.assetFile(for: record, field: "image") == local)
            #expect(bService.calls("downloadAsset") == 1)
            #expect(try await b.assetFile(for: record, field: "title") == nil)

            // The device that uploaded it has it in its cache already.
            let mine = try #require(try a.store.record(zone: "Photos", name: "p1"))
            let aFile = try #require(try await a.assetFile(for: mine, field: "image"))
            #expect(try Data(contentsOf: aFile) == bytes)
        }
    }

    @Test func anUploadInterruptedByAKilledAppResumesOnRelaunchAndTheRecordArrivesIntact() async throws {
        try await SyncHarness.with { harness in
            let bytes = TestBytes.make(1_000_000, seed: 2)
            let file = try TestBytes.write(bytes, in: harness.directory)
            let stalling = StallingUploads(stallAt: 0.5)
            do {
                let (a, service) = try harness.engine("A", configuration: Self.configuration, assetTransport: stalling)
                try await a.start()
                try a.store.write { _, outbox in try outbox.save(photo("p1", file: file)) }
                let send = Task { try await a.sendChanges() }
                // Half the file is on the server; the app is killed.
                try await stalling.waitUntilStalled()
                stalling.kill()
                _ = await send.result
                #expect(service.calls("modify") == 0, "a record is never sent without its asset")
                #expect(try a.store.pendingCount() == 1)
            }

            // Relaunch: a new engine over the same store.
            let counting = StallingUploads(stallAt: nil)
            let (relaunched, service) = try harness.engine("A", configuration: Self.configuration, assetTransport: counting)
            try await relaunched.start()
            #expect(try relaunched.store.pendingCount() == 0)
            #expect(service.calls("uploadAsset:resuming") == 1)
            #expect(service.calls("assetUploadURLs") == 0)
            // Only the second half was sent again.
            #expect(counting.uploadedRanges == [500_000..<1_000_000])

            let (b, _) = try harness.engine("B", configuration: Self.configuration)
            try await b.start()
            let record = try #require(try b.store.record(zone: "Photos", name: "p1"))
            let local = try #require(try await b.assetFile(for: record, field: "image"))
            #expect(try Data(contentsOf: local) == bytes)
        }
    }

    @Test func anExpiredDownloadURLIsRenewedByLookingTheRecordUp() async throws {
        try await SyncHarness.with { harness in
            let (a, b, bService) = try await devices(harness)
            let bytes = TestBytes.make(20_000, seed: 9)
            try a.store.write { _, outbox in try outbox.save(photo("p1", file: try TestBytes.write(bytes, in: harness.directory))) }
            try await a.sendChanges()
            try await b.fetchChanges()
            let record = try #require(try b.store.record(zone: "Photos", name: "p1"))

            bService.failNext("downloadAsset", with: NimbusError(.assetNotAvailable, "injected: the URL expired"))
            let file = try #require(try await b.assetFile(for: record, field: "image"))
            #expect(try Data(contentsOf: file) == bytes)
            #expect(bService.calls("lookup") == 1)
            #expect(bService.calls("downloadAsset") == 2)
        }
    }

    @Test func uploadsAndDownloadsReportTheirProgress() async throws {
        try await SyncHarness.with { harness in
            let (a, b, _) = try await devices(harness)
            let aEvents = a.events()
            let bEvents = b.events()
            let file = try TestBytes.write(TestBytes.make(300_000, seed: 4), in: harness.directory)
            try a.store.write { _, outbox in try outbox.save(photo("p1", file: file)) }
            try await a.sendChanges()
            let uploaded = try await firstEvent(aEvents) { event in
                if case .assetProgress(let transfer) = event { return transfer.progress.completedBytes == 300_000 }
                return false
            }
            guard case .assetProgress(let up) = uploaded else { return }
            #expect(up.direction == .upload && up.recordName == "p1" && up.field == "image")

            try await b.fetchChanges()
            let record = try #require(try b.store.record(zone: "Photos", name: "p1"))
            let seen = NIOLockedValueBox<[Int64]>([])
            _ = try await b.assetFile(for: record, field: "image") { progress in
                seen.withLockedValue { $0.append(progress.completedBytes) }
            }
            #expect(seen.withLockedValue { $0.last } == 300_000)
            let downloaded = try await firstEvent(bEvents) { event in
                if case .assetProgress(let transfer) = event { return transfer.direction == .download }
                return false
            }
            guard case .assetProgress(let down) = downloaded else { return }
            #expect(down.progress.totalBytes == 300_000)
        }
    }

    @Test func theCacheEvictsTheLeastRecentlyUsedFilesBeyondItsBound() async throws {
        try await SyncHarness.with { harness in
            var configuration = Self.configuration
            configuration.assetCacheBytes = 250_000
            let (a, b, bService) = try await devices(harness, b: configuration)
            let files = try (1...3).map { try TestBytes.write(TestBytes.make(100_000, seed: UInt64($0)), in: harness.directory) }
            try a.store.write { _, outbox in
                for (index, file) in files.enumerated() { try outbox.save(photo("p\(index + 1)", file: file)) }
            }
            try await a.sendChanges()
            try await b.fetchChanges()
            let records = try (1...3).map { try #require(try b.store.record(zone: "Photos", name: "p\($0)")) }

            let first = try #require(try await b.assetFile(for: records[0], field: "image"))
            let second = try #require(try await b.assetFile(for: records[1], field: "image"))
            #expect(try await b.assetFile(for: records[0], field: "image") == first)  // p1 used again: p2 is older
            let third = try #require(try await b.assetFile(for: records[2], field: "image"))
            #expect(FileManager.default.fileExists(atPath: first.path))
            #expect(!FileManager.default.fileExists(atPath: second.path))
            #expect(FileManager.default.fileExists(atPath: third.path))
            #expect(bService.calls("downloadAsset") == 3)
            // Evicted, then asked for: downloaded again.
            _ = try await b.assetFile(for: records[1], field: "image")
            #expect(bService.calls("downloadAsset") == 4)
        }
    }

    @Test func smallAssetsArriveEagerlyWhenTheAppSetsALimit() async throws {
        try await SyncHarness.with { harness in
            var configuration = Self.configuration
            configuration.eagerAssetBytes = 50_000
            let (a, b, bService) = try await devices(harness, b: configuration)
            let small = try TestBytes.write(TestBytes.make(10_000, seed: 1), in: harness.directory)
            let large = try TestBytes.write(TestBytes.make(100_000, seed: 2), in: harness.directory)
            try a.store.write { _, outbox in
                try outbox.save(photo("small", file: small))
                try outbox.save(photo("large", file: large))
            }
            try await a.sendChanges()
            try await b.fetchChanges()
            #expect(bService.calls("downloadAsset") == 1)
            let record = try #require(try b.store.record(zone: "Photos", name: "small"))
            _ = try await b.assetFile(for: record, field: "image")
            #expect(bService.calls("downloadAsset") == 1)
            // The app prefetches the rest when conditions allow.
            #expect(try await b.prefetchAssets(smallerThan: .max) == 1)
            #expect(bService.calls("downloadAsset") == 2)
        }
    }

    @Test func anAssetListArrivesLazilyFileByFile() async throws {
        try await SyncHarness.with { harness in
            let (a, b, bService) = try await devices(harness)
            let pages = [TestBytes.make(30_000, seed: 11), TestBytes.make(40_000, seed: 12), TestBytes.make(50_000, seed: 13)]
            let files = try pages.map { try TestBytes.write($0, in: harness.directory) }
            let album = LocalRecord(
                zoneName: "Photos", recordName: "album", recordType: "Album",
                fields: ["pages": .list(elementType: .asset, files.map { Nimbus.Asset(fileURL: $0).fieldValue })])
            try a.store.write { _, outbox in try outbox.save(album) }
            try await a.sendChanges()
            #expect(try a.store.pendingCount() == 0)

            try await b.fetchChanges()
            let record = try #require(try b.store.record(zone: "Photos", name: "album"))
            #expect(bService.calls("downloadAsset") == 0)
            let indices = NIOLockedValueBox<Set<Int>>([])
            let local = try await b.assetFiles(for: record, field: "pages") { index, _ in
                indices.withLockedValue { _ = $0.insert(index) }
            }
            #expect(try local.map { try Data(contentsOf: $0) } == pages)
            #expect(indices.withLockedValue { $0 } == [0, 1, 2])
            #expect(bService.calls("downloadAsset") == 3)
            #expect(try await b.assetFiles(for: record, field: "pages") == local, "cached")
            #expect(bService.calls("downloadAsset") == 3)
            // Prefetch knows list elements too: a fresh device fetches all three ahead.
            let (c, cService) = try harness.engine("C", configuration: Self.configuration)
            try await c.start()
            try await c.fetchChanges()
            #expect(try await c.prefetchAssets(smallerThan: .max) == 3)
            #expect(cService.calls("downloadAsset") == 3)
        }
    }

    @Test func aLostZoneIsRecreatedWithItsAssetsUploadedAgainFromTheCache() async throws {
        try await SyncHarness.with { harness in
            let (a, b, _) = try await devices(harness)
            let bytes = TestBytes.make(60_000, seed: 21)
            let file = try TestBytes.write(bytes, in: harness.directory)
            try a.store.write { _, outbox in try outbox.save(photo("p1", file: file)) }
            try await a.sendChanges()
            try FileManager.default.removeItem(at: file)  // only A's cache holds the bytes now

            // Another device deletes the zone and the server reclaims the bytes.
            try await b.fetchChanges()
            _ = try await harness.container(device: "admin").privateCloudDatabase.deleteRecordZone(
                withID: ZoneID(zoneName: "Photos"))
            let later = Int64(Date().timeIntervalSince1970 * 1000) + 48 * 3_600_000
            #expect(try await harness.server.collectAssetsNow(now: later).blobs == 1)

            try await a.fetchChanges()
            try await a.sendChanges()
            #expect(try a.store.pendingCount() == 0)
            let (fresh, _) = try harness.engine("fresh", configuration: Self.configuration)
            try await fresh.start()
            let record = try #require(try fresh.store.record(zone: "Photos", name: "p1"))
            let local = try #require(try await fresh.assetFile(for: record, field: "image"))
            #expect(try Data(contentsOf: local) == bytes)
        }
    }
}

enum TestBytes {
    static func make(_ count: Int, seed: UInt64) -> Data {
        var generator = SplitMix64(seed: seed)
        return Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    static func write(_ bytes: Data, in directory: String) throws -> URL {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let url = URL(fileURLWithPath: directory).appendingPathComponent("file-\(UUID().uuidString).bin")
        try bytes.write(to: url)
        return url
    }
}

/// The real streaming transport; with `stallAt`, the first upload sends that fraction of the
/// file (as a resumable chunk, which the server keeps) and then hangs until ``kill()``, when
/// it fails as the process dying would end it. Records the ranges of the uploads that ran
/// whole.
final class StallingUploads: AssetTransport {
    private let base = HTTPClientTransport()
    private let stallAt: Double?
    private let state = NIOLockedValueBox((ranges: [Range<Int64>](), stalled: false))
    private let (stalls, signal) = AsyncStream<Void>.makeStream()
    private let (kills, killer) = AsyncStream<Void>.makeStream()

    /// Ends the stalled upload.
    func kill() {
        killer.yield()
        killer.finish()
    }

    init(stallAt: Double?) {
        self.stallAt = stallAt
    }

    var uploadedRanges: [Range<Int64>] { state.withLockedValue { $0.ranges } }

    func waitUntilStalled() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { for await _ in self.stalls { return } }
            group.addTask {
                try await Task.sleep(for: .seconds(20))
                throw CancellationError()
            }
            try await group.next()
            group.cancelAll()
        }
    }

    func upload(
        _ request: TransportRequest, file: URL, range: Range<Int64>, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> TransportResponse {
        let stall = state.withLockedValue { state -> Bool in
            defer { state.stalled = true }
            return stallAt != nil && !state.stalled
        }
        if stall, let fraction = stallAt {
            let end = Int64(Double(range.upperBound) * fraction)
            var chunk = request
            chunk.method = .put
            chunk.headers["Content-Range"] = "bytes 0-\(end - 1)/\(range.upperBound)"
            _ = try await base.upload(chunk, file: file, range: 0..<end, progress: progress)
            signal.yield()
            for await _ in kills { break }
            throw CancellationError()
        }
        state.withLockedValue { $0.ranges.append(range) }
        return try await base.upload(request, file: file, range: range, progress: progress)
    }

    func download(
        _ request: TransportRequest, into file: URL, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> TransportResponse {
        try await base.download(request, into: file, progress: progress)
    }
}
