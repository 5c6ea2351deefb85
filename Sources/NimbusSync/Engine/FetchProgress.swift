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
///     }
/// }
/// ```
///
/// The counts start at zero with each fetch of the zone (a fetch resumed after the app was
/// stopped counts what it fetches itself; what earlier runs stored is in the store already).
/// A `records/changes` answer does not say how many records remain, so no total is given:
/// ``moreComing`` says whether more pages follow.
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

    /// A fetch of `zone` that has applied nothing yet.
    public init(zone: String, started: Date) {
        self.zone = zone
        self.records = 0
        self.bytes = 0
        self.pages = 0
        self.moreComing = true
        self.started = started
        self.updated = started
    }

    /// Records applied per second since the fetch started (0 before the first page).
    public var recordsPerSecond: Double {
        let seconds = updated.timeIntervalSince(started)
        return seconds > 0 ? Double(records) / seconds : 0
    }

    /// Counts a page applied at `now`.
    mutating func add(_ page: RecordZoneChanges, at now: Date) {
        records += page.modifications.count + page.deletions.count
        bytes += page.responseBytes
        pages += 1
        moreComing = page.moreComing
        updated = now
    }
}
