import Foundation
import Nimbus
import NimbusProtocol

/// Assets: uploaded before the save of the record that holds them, downloaded lazily into an
/// evictable cache.
extension SyncEngine {
    /// What uploading a batch's assets left: the records to send (with receipts), the
    /// records that failed for good, and the files uploaded (for the cache).
    struct PreparedAssets: Sendable {
        var records: [Nimbus.Record] = []
        /// Names of the records whose saves carry receipts.
        var withReceipts: Set<String> = []
        var failures: [SyncEvent.SendFailure] = []
        var uploaded: [String: [(file: URL, asset: Nimbus.Asset)]] = [:]
    }

    /// Uploads the asset files the saves of `records` carry, keeping each upload URL before
    /// its first byte and each answer after its last, so an interrupted upload resumes (on
    /// relaunch too) and a record is never sent without its assets.
    func uploadingAssets(_ records: [Nimbus.Record], zone: String) async throws -> PreparedAssets {
        var prepared = PreparedAssets()
        let carrying = records.filter { !AssetPlanner.localFiles(of: $0).isEmpty }
        guard !carrying.isEmpty else {
            prepared.records = records
            return prepared
        }
        let names = carrying.map(\.id.recordName)
        var known = try await store.reading { try $0.assetUploads(zone: zone, names: names) }
        // Upload URLs for the files that have none, in one request per 200.
        var missing: [(AssetUploadKey, String)] = []
        for record in carrying {
            for case .requestURL(let key) in AssetPlanner.steps(for: record, known: known) {
                missing.append((key, record.recordType))
            }
        }
        if !missing.isEmpty { try await requestUploadURLs(missing, zone: zone, into: &known) }
        // URLs asked for just now have no bytes behind them: no need to ask the server.
        let fresh = Set(missing.map(\.0))
        var uploads: [AssetUploadKey: Nimbus.Asset] = [:]
        var wanted: [PlannedUpload] = []
        for record in carrying {
            for step in AssetPlanner.steps(for: record, known: known) {
                switch step {
                case .ready(let key, let asset):
                    uploads[key] = asset
                case .upload(let key, let url, let resuming, let format):
                    wanted.append(
                        PlannedUpload(
                            key: key, url: url, resuming: resuming && !fresh.contains(key), format: format,
                            recordType: record.recordType))
                case .requestURL:
                    throw NimbusError(.internalError, "no upload URL was kept for an asset of \(record.id.recordName)")
                }
            }
        }
        var failed = Set<String>()
        for (planned, result) in try await uploadConcurrently(wanted, zone: zone) {
            switch result {
            case .success(let asset):
                uploads[planned.key] = asset
                prepared.uploaded[planned.key.recordName, default: []].append((URL(fileURLWithPath: planned.key.file), asset))
            case .failure(let error):
                if failed.insert(planned.key.recordName).inserted {
                    prepared.failures.append(SyncEvent.SendFailure(zone: zone, recordName: planned.key.recordName, error: error))
                }
            }
        }
        for record in records {
            let name = record.id.recordName
            if failed.contains(name) { continue }
            guard names.contains(name) else {
                prepared.records.append(record)
                continue
            }
            // Never sent without its assets.
            guard let ready = AssetPlanner.withReceipts(record, uploads: uploads) else { continue }
            prepared.records.append(ready)
            prepared.withReceipts.insert(name)
        }
        return prepared
    }

    /// One file to upload: its key, URL, and whether an earlier attempt may have sent part of it.
    struct PlannedUpload: Sendable {
        var key: AssetUploadKey
        var url: URL
        var resuming: Bool
        var format: UInt8?
        var recordType: String
    }

    /// Uploads `planned`, up to ``SyncConfiguration/maxConcurrentUploads`` files at once (a
    /// small file's upload is one round trip: one after another, a folder of small files
    /// waits on the network for each). Answers in `planned`'s order: each file's asset, or the
    /// error that refused it for good; any other error (retryable after the retries, a
    /// cancellation) stops the others and is thrown.
    private func uploadConcurrently(
        _ planned: [PlannedUpload], zone: String
    ) async throws -> [(PlannedUpload, Result<Nimbus.Asset, NimbusError>)] {
        let width = max(1, configuration.maxConcurrentUploads)
        var results = [Result<Nimbus.Asset, NimbusError>?](repeating: nil, count: planned.count)
        try await withThrowingTaskGroup(of: (Int, Result<Nimbus.Asset, NimbusError>).self) { group in
            func start(_ index: Int) {
                let item = planned[index]
                group.addTask {
                    do {
                        let asset = try await self.upload(
                            item.key, url: item.url, resuming: item.resuming, format: item.format, recordType: item.recordType,
                            zone: zone)
                        return (index, .success(asset))
                    } catch let error as NimbusError where !error.isRetryable && error.code != .operationCancelled {
                        return (index, .failure(error))
                    }
                }
            }
            var next = 0
            while next < min(width, planned.count) {
                start(next)
                next += 1
            }
            while let (index, result) = try await group.next() {
                results[index] = result
                if next < planned.count {
                    start(next)
                    next += 1
                }
            }
        }
        return zip(planned, results).compactMap { planned, result in result.map { (planned, $0) } }
    }

    private func requestUploadURLs(
        _ missing: [(AssetUploadKey, String)], zone: String, into known: inout [AssetUploadKey: AssetUploadState]
    ) async throws {
        let fields = missing.map { AssetField(recordName: $0.0.recordName, recordType: $0.1, field: $0.0.field) }
        var urls: [URL] = []
        var start = 0
        while start < fields.count {
            let page = Array(fields[start..<min(start + 200, fields.count)])
            urls += try await retrying { try await self.service.assetUploadURLs(zone: zone, for: page) }
            start += page.count
        }
        let keys = missing.map(\.0)
        let kept = urls
        try await store.transaction { transaction in
            for (key, url) in zip(keys, kept) { try transaction.setUploadURL(url, zone: zone, key: key) }
        }
        for (key, url) in zip(keys, urls) { known[key] = AssetUploadState(url: url, format: Nimbus.Database.currentAssetFormat) }
    }

    /// Uploads one file and keeps its answer. An upload URL that expired (or was used) is
    /// replaced by a new one once.
    private func upload(
        _ key: AssetUploadKey, url: URL, resuming: Bool, format: UInt8?, recordType: String, zone: String
    ) async throws -> Nimbus.Asset {
        let file = URL(fileURLWithPath: key.file)
        let report: @Sendable (TransferProgress) -> Void = { [weak self] progress in
            self?.emit(.assetProgress(SyncEvent.AssetTransfer(
                direction: .upload, zone: zone, recordName: key.recordName, field: key.field, progress: progress)))
        }
        let fresh = AssetField(recordName: key.recordName, recordType: recordType, field: key.field)
        let field = AssetField(
            recordName: key.recordName, recordType: recordType, field: key.field, assetFormat: resuming ? format : nil)
        let asset: Nimbus.Asset
        do {
            asset = try await retrying {
                try await self.service.uploadAsset(
                    file, for: field, zone: zone, to: url, resuming: resuming, progress: report)
            }
        } catch let error as NimbusError where resuming && (error.code == .invalidArguments || error.code == .unknownItem) {
            var known: [AssetUploadKey: AssetUploadState] = [:]
            try await requestUploadURLs([(key, recordType)], zone: zone, into: &known)
            guard let url = known[key]?.url else { throw error }
            asset = try await retrying {
                try await self.service.uploadAsset(file, for: fresh, zone: zone, to: url, resuming: false, progress: report)
            }
        }
        try await store.transaction { try $0.setUploaded(asset, zone: zone, key: key) }
        return asset
    }

    /// After saves that spent receipts: the uploaded files go into the cache (this device
    /// then never downloads its own assets).
    func adoptUploads(_ uploaded: [String: [(file: URL, asset: Nimbus.Asset)]], saved: [String]) async throws {
        var cached: [(checksum: String, size: Int64)] = []
        for name in saved {
            for (file, asset) in uploaded[name] ?? [] {
                guard let checksum = asset.fileChecksum, let size = asset.size else { continue }
                let cacheFile = cacheFile(checksum)
                if !FileManager.default.fileExists(atPath: cacheFile.path) {
                    try? FileManager.default.createDirectory(at: cacheDirectory, withIntermediateDirectories: true)
                    guard (try? FileManager.default.copyItem(at: file, to: cacheFile)) != nil else { continue }
                }
                cached.append((checksum, size))
            }
        }
        // One transaction for the batch's files, not one each.
        if !cached.isEmpty {
            let files = cached
            try await store.transaction { transaction in
                for (checksum, size) in files { try transaction.touchCachedAsset(checksum, size: size) }
            }
        }
        if !uploaded.isEmpty { try await evict(keeping: []) }
    }

    // MARK: - Downloads

    /// The asset cache's directory: beside the store's file.
    nonisolated var cacheDirectory: URL { URL(fileURLWithPath: store.path + "-assets", isDirectory: true) }

    nonisolated func cacheFile(_ checksum: String) -> URL {
        cacheDirectory.appendingPathComponent(AssetPlanner.fileName(checksum: checksum))
    }

    /// A local file with the bytes of `record`'s asset `field`, downloading it into the cache
    /// if needed (resuming a download an earlier call or run began); `nil` when the field
    /// holds no asset. A pending asset not uploaded yet is its own file.
    ///
    /// ```swift
    /// if let thumbnail = try await engine.assetFile(for: article, field: "thumbnail") {
    ///     show(imageAt: thumbnail)
    /// }
    /// ```
    ///
    /// The file stays until the cache evicts it (``SyncConfiguration/assetCacheBytes``): copy
    /// it to keep it. Concurrent calls for the same file share one download.
    ///
    /// For an `ASSET_LIST` field use ``assetFiles(for:field:progress:)``.
    public func assetFile(
        for record: LocalRecord, field: String, progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws -> URL? {
        guard let value = record.fields[field], let asset = Nimbus.Asset(fieldValue: value) else { return nil }
        return try await localFile(of: asset, record: record, field: field, progress: progress)
    }

    /// Local files with the bytes of each asset of `record`'s `ASSET_LIST` field `field`, in
    /// the list's order, downloading into the cache those not there yet (one after another;
    /// `progress` reports each file's transfer with its index). One file for an `ASSET`
    /// field, none when the field holds no asset.
    ///
    /// ```swift
    /// let pages = try await engine.assetFiles(for: album, field: "pages")
    /// ```
    public func assetFiles(
        for record: LocalRecord, field: String, progress: (@Sendable (Int, TransferProgress) -> Void)? = nil
    ) async throws -> [URL] {
        var files: [URL] = []
        for (index, asset) in (record.fields[field]?.sdkAssets ?? []).enumerated() {
            let report = progress.map { progress in { @Sendable (transfer: TransferProgress) in progress(index, transfer) } }
            files.append(try await localFile(of: asset, record: record, field: field, progress: report))
        }
        return files
    }

    /// A pending asset's own file, or the cached (downloaded if needed) file of a stored one.
    private func localFile(
        of asset: Nimbus.Asset, record: LocalRecord, field: String, progress: (@Sendable (TransferProgress) -> Void)?
    ) async throws -> URL {
        if let file = asset.fileURL { return file }
        return try await cachedFile(asset, zone: record.zoneName, recordName: record.recordName, field: field, progress: progress)
    }

    /// Downloads the assets of `records` that are not cached yet, smaller than `maxBytes`,
    /// in the records' order (put the ones the user will see first). Returns how many files
    /// it downloaded. Call it when conditions allow (Wi-Fi, charging: the app decides).
    @discardableResult
    public func prefetchAssets(
        for records: [LocalRecord], fields: Set<String>? = nil, smallerThan maxBytes: Int64 = .max
    ) async throws -> Int {
        let cached = Set(try await store.reading { try $0.cachedAssets() }.map(\.checksum))
        var count = 0
        for (record, field, asset) in AssetPlanner.prefetch(records, fields: fields, smallerThan: maxBytes, cached: cached) {
            _ = try await cachedFile(asset, zone: record.zoneName, recordName: record.recordName, field: field, progress: nil)
            count += 1
        }
        return count
    }

    /// ``prefetchAssets(for:fields:smallerThan:)`` for every record of `zones` (all the
    /// configured zones when `nil`, and the shared zones the device holds when
    /// ``SyncConfiguration/syncsSharedDatabase``), smallest files first.
    @discardableResult
    public func prefetchAssets(inZones zones: [String]? = nil, smallerThan maxBytes: Int64) async throws -> Int {
        var records: [LocalRecord] = []
        var all = configuration.zones
        if configuration.syncsSharedDatabase { all += try store.sharedZoneIDs().map(\.localZoneName) }
        for zone in zones ?? all { records += try store.records(inZone: zone) }
        return try await prefetchAssets(for: records, smallerThan: maxBytes)
    }

    private func cachedFile(
        _ asset: Nimbus.Asset, zone: String, recordName: String, field: String,
        progress: (@Sendable (TransferProgress) -> Void)?
    ) async throws -> URL {
        guard let checksum = asset.fileChecksum, let size = asset.size else {
            throw NimbusError(.invalidArguments, "the field '\(field)' holds an asset with no checksum")
        }
        if let running = downloads[checksum] { return try await running.value }
        let file = cacheFile(checksum)
        if try await store.reading({ try $0.cachedAsset(checksum) }) != nil, FileManager.default.fileExists(atPath: file.path) {
            try await store.transaction { try $0.touchCachedAsset(checksum, size: size) }
            return file
        }
        let task = Task {
            try await self.download(asset, to: file, zone: zone, recordName: recordName, field: field, progress: progress)
        }
        downloads[checksum] = task
        defer { downloads[checksum] = nil }
        return try await task.value
    }

    private func download(
        _ asset: Nimbus.Asset, to file: URL, zone: String, recordName: String, field: String,
        progress: (@Sendable (TransferProgress) -> Void)?
    ) async throws -> URL {
        let report: @Sendable (TransferProgress) -> Void = { [weak self] transfer in
            progress?(transfer)
            self?.emit(.assetProgress(SyncEvent.AssetTransfer(
                direction: .download, zone: zone, recordName: recordName, field: field, progress: transfer)))
        }
        try FileManager.default.createDirectory(at: cacheDirectory, withIntermediateDirectories: true)
        do {
            try await retrying { try await self.service.downloadAsset(asset, to: file, progress: report) }
        } catch let error as NimbusError where error.code == .assetNotAvailable {
            // The download URL the store kept expired: ask the server for the record again.
            guard let fresh = try await retrying({ try await self.service.lookup(zone: zone, recordName: recordName) }),
                let renewed = fresh.fieldValue(forKey: field)?.sdkAssets.first(where: { $0.fileChecksum == asset.fileChecksum })
            else { throw error }
            try await retrying { try await self.service.downloadAsset(renewed, to: file, progress: report) }
        }
        guard let checksum = asset.fileChecksum, let size = asset.size else { return file }
        try await store.transaction { try $0.touchCachedAsset(checksum, size: size) }
        try await evict(keeping: [checksum])
        return file
    }

    /// The cache's files that are on disk, by checksum.
    func cachedFiles() async throws -> [String: URL] {
        var files: [String: URL] = [:]
        for asset in try await store.reading({ try $0.cachedAssets() }) {
            let file = cacheFile(asset.checksum)
            if FileManager.default.fileExists(atPath: file.path) { files[asset.checksum] = file }
        }
        return files
    }

    /// Evicts least recently used files beyond ``SyncConfiguration/assetCacheBytes``.
    func evict(keeping kept: Set<String>) async throws {
        let bound = configuration.assetCacheBytes
        let evicted = try await store.transaction { transaction in
            let pinned = try transaction.pinnedAssetChecksums().union(kept)
            let evicted = AssetPlanner.evictions(try transaction.cachedAssets(), bound: bound, pinned: pinned)
            for checksum in evicted { try transaction.removeCachedAsset(checksum) }
            return evicted
        }
        for checksum in evicted { try? FileManager.default.removeItem(at: cacheFile(checksum)) }
    }
}
