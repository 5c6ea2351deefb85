import Logging
import NimbusStore
import ServiceLifecycle

/// Removes tombstones and deleted zones older than the retention window, on a schedule.
struct CompactionService: Service {
    let store: any RecordStore
    let retention: Duration
    let interval: Duration
    let logger: Logger

    func run() async throws {
        // Graceful shutdown cancels the sleep; that is a normal end, not a failure.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                do {
                    let report = try await store.compact(retentionMillis: retention.milliseconds, now: CloudKitAPI.now())
                    if report.tombstonesRemoved + report.zonesRemoved > 0 {
                        logger.info(
                            "compacted \(report.tombstonesRemoved) tombstones and \(report.zonesRemoved) deleted zones")
                    }
                } catch {
                    logger.error("compaction failed: \(error)")
                }
            }
        }
    }
}
