import Foundation
import Nimbus

/// How far a fetch of one zone's changes got: reported as ``SyncEvent/fetchProgress(_:)``
/// after each page is committed to the local store, so an app can show a first sync of a
/// large zone advancing ("12 000 records, 5.1 MB").
///
/// ```swift
/// for await event in engine.events() {
///     if case .fetchProgress(let progress) = event {
///         status = "\(progress.records) records, \(progress.bytes / 1_000_000) MB"
///         if let left = progress.remainingEstimate, let seconds = progress.estimatedSecondsLeft {
///             status += ", about \(left) to go (\(Int(seconds)) s)"
///         }
///     }
/// }
/// ```
///
/// The counts start at zero with each fetch of the zone (a fetch resumed after the app was
/// stopped counts what it fetches itself; what earlier runs stored is in the store already).
/// The engine asks a Nimbus server, with the fetch's first page, how many changes follow it
/// (``RecordZoneChanges/remainingChanges``), and counts down from there: that is
/// ``remainingEstimate``. CloudKit Web Services has no such count: against other servers it
/// stays `nil`, and ``moreComing`` says whether more pages follow.
public struct FetchProgress: Sendable, Hashable {
    /// The zone (its ``ZoneID/localZoneName`` for another user's zone).
    public var zone: String
    /// Records saved or deleted by the pages applied so far in this fetch.
    public var records: Int
    /// Bytes of the server's answers applied so far in this fetch.
    public var bytes: Int
    /// Pages applied so far in this fetch.
    public var pages: Int
    /// Whether the server has more pages for this fetch.
    public var moreComing: Bool
    /// When this fetch of the zone started, on the store's clock (``SyncClock/now``).
    public var started: Date
    /// When the last page was committed, on the same clock.
    public var updated: Date
    /// About how many changes remain to fetch: the server's count with the fetch's first page
    /// less the records of the pages since; 0 once no more are coming; `nil` when the server
    /// gave no count. An upper bound while the zone does not change meanwhile (tombstones of
    /// records created after the fetch's start count, and the feed leaves them out); changes
    /// made during the fetch can make it low, and it never goes below 0 before the end.
    public var remainingEstimate: Int?

    /// A fetch of `zone` that has applied nothing yet.
    public init(zone: String, started: Date) {
        self.zone = zone
        self.records = 0
        self.bytes = 0
        self.pages = 0
        self.moreComing = true
        self.started = started
        self.updated = started
        self.remainingEstimate = nil
    }

    /// Seconds until ``remainingEstimate`` is fetched at ``recordsPerSecond`` (`nil` without
    /// an estimate or before a record was applied).
    public var estimatedSecondsLeft: Double? {
        guard let remainingEstimate, recordsPerSecond > 0 else { return nil }
        return Double(remainingEstimate) / recordsPerSecond
    }

    /// Records applied per second since the fetch started (0 before the first page).
    public var recordsPerSecond: Double {
        let seconds = updated.timeIntervalSince(started)
        return seconds > 0 ? Double(records) / seconds : 0
    }

    /// Counts a page applied at `now`.
    mutating func add(_ page: RecordZoneChanges, at now: Date) {
        let count = page.modifications.count + page.deletions.count
        records += count
        bytes += page.responseBytes
        pages += 1
        moreComing = page.moreComing
        updated = now
        if !page.moreComing {
            remainingEstimate = 0
        } else if let counted = page.remainingChanges {
            remainingEstimate = counted
        } else if let estimate = remainingEstimate {
            remainingEstimate = max(0, estimate - count)
        }
    }
}
