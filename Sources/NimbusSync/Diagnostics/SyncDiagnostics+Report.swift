import Foundation

extension SyncDiagnostics {
    /// The diagnostics as lines of text for people (a status screen, a log, a command line):
    /// times are shown as ages before ``takenAt``.
    ///
    /// ```swift
    /// for line in try await engine.diagnostics().reportLines { print(line) }
    /// // Account _a1b2…: 2 pending, 1 given up
    /// // Zone ReadingList: 2 pending; fetched 4s ago (ok); sent 3s ago (failed: THROTTLED …); token saved 4s ago
    /// //   save Bookmark b1: queued 2m ago, 3 attempts, last: THROTTLED (requestRateLimited): …, next retry in 27s
    /// ```
    public var reportLines: [String] {
        var lines: [String] = []
        let who = account.map { "Account \($0)" } ?? "No account yet"
        lines.append("\(who)\(isSignedOut ? " (signed out)" : ""): \(pendingCount) pending, \(givenUp.count) given up")
        if let fetch = lastDatabaseFetch { lines.append("Database: fetched \(describe(fetch))") }
        for subscription in subscriptions {
            let saved = subscription.savedAt.map { ", saved \(age($0))" } ?? ""
            lines.append("Subscription \(subscription.id) (\(subscription.database.rawValue) database): \(subscription.state.rawValue)\(saved)")
        }
        if let push {
            var line = "Push: " + (push.isConnected ? "connected" : "disconnected")
            if let since = push.since { line += " since \(age(since))" }
            line += ", \(push.pushesReceived) pushes"
            if let last = push.lastPushAt { line += " (last \(age(last)))" }
            line += ", \(push.reconnects) reconnects"
            if !push.isConnected, let error = push.lastError { line += "; \(error)" }
            if !push.isConnected, let next = push.nextAttemptAt { line += "; retrying in \(duration(next.timeIntervalSince(takenAt)))" }
            lines.append(line)
        } else {
            lines.append("Push: not listening")
        }
        for zone in zones {
            var line = "Zone \(zone.name): \(zone.pendingCount) pending"
            line += zone.lastFetch.map { "; fetched \(describe($0))" } ?? "; never fetched"
            if let send = zone.lastSend { line += "; sent \(describe(send))" }
            line += zone.token.hasToken ? "; token saved \(zone.token.savedAt.map(age) ?? "")" : "; no token"
            if zone.token.expiries > 0 { line += " (expired \(zone.token.expiries)×, refetched)" }
            lines.append(line)
            for entry in zone.pending {
                var entryLine = "  \(entry.kind.rawValue) \(entry.recordType) \(entry.recordName): queued \(duration(entry.ageSeconds)) ago"
                if entry.attempts > 0 { entryLine += ", \(entry.attempts) attempt\(entry.attempts == 1 ? "" : "s")" }
                if let error = entry.lastError { entryLine += ", last: \(error)" }
                if let next = entry.nextRetryAt, next > takenAt { entryLine += ", next retry in \(duration(next.timeIntervalSince(takenAt)))" }
                lines.append(entryLine)
            }
            if zone.pending.count < zone.pendingCount { lines.append("  … and \(zone.pendingCount - zone.pending.count) more") }
        }
        for change in givenUp {
            var line = "Given up: \(change.kind.rawValue) \(change.zoneName)/\(change.recordName) (#\(change.id), \(change.reason.rawValue)"
            line += ", \(age(change.givenUpAt)))"
            if let error = change.error { line += ": \(error)" }
            lines.append(line)
        }
        if quarantine.count > 0 {
            let reasons = quarantine.byReason.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
            lines.append("Quarantine: \(quarantine.count) (\(reasons.joined(separator: ", ")))")
        }
        let winners = conflicts.fieldsByWinner.sorted { $0.key < $1.key }.map { "\($0.key) won \($0.value)" }
        lines.append("Conflicts: \(conflicts.count) records" + (winners.isEmpty ? "" : " (fields: \(winners.joined(separator: ", ")))"))
        for conflict in conflicts.recent {
            let fields = conflict.resolutions.map { "\($0.field) → \($0.winner.rawValue) (\($0.policy))" }
            lines.append("  \(conflict.zoneName)/\(conflict.recordName): \(fields.joined(separator: ", "))")
        }
        lines.append(
            "Assets: \(assets.pendingUploads) to upload, \(assets.uploadedAwaitingSave) uploaded awaiting their save, "
                + "\(assets.downloadsInFlight) downloading, \(assets.cachedFiles) cached (\(assets.cachedBytes) bytes)")
        if let throttled = throttling.lastThrottledAt {
            var line = "Throttling: last THROTTLED \(age(throttled))"
            if let after = throttling.lastRetryAfterSeconds { line += " (retryAfter \(duration(after)))" }
            line += ", \(throttling.throttledCount) in all"
            lines.append(line)
        }
        if let until = throttling.backoffUntil, until > takenAt {
            lines.append("Backing off for \(duration(until.timeIntervalSince(takenAt))) after \(throttling.backoffError?.description ?? "an error")")
        }
        return lines
    }

    private func describe(_ activity: Activity) -> String {
        age(activity.at) + (activity.error.map { " (failed: \($0))" } ?? " (ok)")
    }

    private func age(_ date: Date) -> String {
        let seconds = takenAt.timeIntervalSince(date)
        return seconds < 0 ? "in \(duration(-seconds))" : "\(duration(seconds)) ago"
    }

    private func duration(_ seconds: Double) -> String {
        switch seconds {
        case ..<1: return String(format: "%.0fms", seconds * 1000)
        case ..<120: return String(format: "%.0fs", seconds)
        case ..<7200: return String(format: "%.0fm", seconds / 60)
        case ..<172_800: return String(format: "%.0fh", seconds / 3600)
        default: return String(format: "%.0fd", seconds / 86400)
        }
    }
}
