import Logging
import NimbusStore
import ServiceLifecycle

/// Reclaims asset bytes nothing needs, on a schedule: uploads that expired without being
/// saved, assets no record version references any more (a record deleted or replaced, a
/// `DELETE_SELF` cascade, a zone deleted), and files no row knows (a crash between storing
/// bytes and recording them), each once older than the grace period.
///
/// Rows go first, in the engine's transaction (which also checks nothing references them);
/// bytes after. A crash in between leaves bytes no row knows, which the next pass finds.
struct AssetCollector: Service {
    let metadata: any AssetMetadataStore
    let bytes: any AssetStore
    let settings: AssetSettings
    let logger: Logger

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: settings.collectionInterval)
                do {
                    let report = try await collect(now: CloudKitAPI.now())
                    if report.blobs + report.uploads > 0 {
                        logger.info("reclaimed \(report.blobs) unreferenced assets and \(report.uploads) uploads")
                    }
                } catch {
                    logger.error("asset collection failed: \(error)")
                }
            }
        }
    }

    /// One pass at `now` (milliseconds since the epoch).
    @discardableResult
    func collect(now: Int64) async throws -> AssetCollectionReport {
        let cutoff = now - settings.gracePeriod.milliseconds
        // Each blob is deleted only if still older than the cutoff: an upload of the same
        // bytes committed meanwhile (which refreshes the blob's age) keeps it.
        var report = try await delete(try await metadata.collectAssetRows(now: now, cutoff: cutoff), writtenBefore: cutoff)
        // Bytes with no row, old enough that no upload in progress is about to record them.
        let orphans = try await metadata.unknownAssetFiles(try await bytes.sweepCandidates(olderThan: cutoff))
        let swept = try await delete(orphans, writtenBefore: cutoff)
        report.blobs += swept.blobs
        report.uploads += swept.uploads
        return report
    }

    private func delete(_ candidates: AssetSweepCandidates, writtenBefore cutoff: Int64) async throws
        -> AssetCollectionReport
    {
        for key in candidates.blobs { try await bytes.deleteBlob(key, writtenBefore: cutoff) }
        for id in candidates.uploads { try await bytes.discardUpload(id) }
        return AssetCollectionReport(blobs: candidates.blobs.count, uploads: candidates.uploads.count)
    }
}

/// What one collection pass deleted.
public struct AssetCollectionReport: Sendable, Equatable {
    /// Blobs whose bytes were deleted.
    public var blobs = 0
    /// Uploads whose bytes were deleted.
    public var uploads = 0

    public init(blobs: Int = 0, uploads: Int = 0) {
        self.blobs = blobs
        self.uploads = uploads
    }
}
