import Logging
import NimbusStore
import ServiceLifecycle

/// Removes tombstones and deleted zones older than the retention window, on a schedule.
struct CompactionService: Service {
    let store: any RecordStore
    let retention: Duration
    let interval: Duration
    let logger: Logger
    /// Whose notification collection to compact with the same retention.
    var notifications: (any NotificationStore)? = nil
    /// What "older than the retention" is measured from.
    let clock: WallClock

    func run() async throws {
        // Graceful shutdown cancels the sleep; that is a normal end, not a failure.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                do {
                    let report = try await store.compact(retentionMillis: retention.milliseconds, now: clock.nowMillis())
                    if report.tombstonesRemoved + report.zonesRemoved > 0 {
                        logger.info(
                            "compacted \(report.tombstonesRemoved) tombstones and \(report.zonesRemoved) deleted zones")
                    }
                    if let notifications {
                        let removed = try await notifications.compactNotifications(
                            retentionMillis: retention.milliseconds, now: clock.nowMillis())
                        if removed > 0 { logger.info("removed \(removed) expired notifications") }
                    }
                } catch {
                    logger.error("compaction failed: \(error)")
                }
            }
        }
    }
}
