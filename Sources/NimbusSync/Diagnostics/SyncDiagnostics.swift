import Foundation

/// "Why didn't it sync?": what a ``SyncEngine`` knows of its state, taken at one moment by
/// ``SyncEngine/diagnostics(pendingLimit:)``. Reads the local store only (no network), so it
/// answers offline too; what must survive a relaunch (pending entries' attempts and last
/// errors, the last fetch and send of each zone, token state, given-up changes, throttling)
/// is kept in the ``LocalStore``.
///
/// ```swift
/// let diagnostics = try await engine.diagnostics()
/// for zone in diagnostics.zones {
///     for entry in zone.pending where entry.lastError != nil {
///         print("\(zone.name)/\(entry.recordName): \(entry.attempts) attempts, \(entry.lastError!)")
///     }
///     if let fetch = zone.lastFetch, let error = fetch.error { print("fetch failed at \(fetch.at): \(error)") }
/// }
/// let encoder = JSONEncoder()
/// encoder.dateEncodingStrategy = .iso8601
/// let json = try encoder.encode(diagnostics)          // for a bug report
/// ```
public struct SyncDiagnostics: Sendable, Codable, Hashable {
    /// When these diagnostics were taken (the engine's ``SyncClock/now``).
    public var takenAt: Date
    /// The user the local data belongs to (`nil` before the first sync, or after a sign-out).
    public var account: String?
    /// The ``Nimbus/Account`` the engine follows is signed out: nothing is fetched or sent.
    public var isSignedOut: Bool
    /// The configured zones, then the shared zones the device holds, then any other zone with
    /// pending changes.
    public var zones: [Zone]
    /// The last `changes/database` of the private database.
    public var lastDatabaseFetch: Activity?
    /// The database subscriptions the engine relies on for pushes.
    public var subscriptions: [Subscription]
    /// The push channel, when the engine listens to a ``Nimbus/PushClient``
    /// (``SyncEngine/listen(to:)-(PushClient)``); `nil` otherwise.
    public var push: PushConnection?
    /// Changes the engine stopped sending, with why (``GivenUpChange``), oldest first.
    public var givenUp: [GivenUp]
    /// Everything set aside: given-up changes and the previous accounts' server copies.
    public var quarantine: Quarantine
    public var conflicts: Conflicts
    public var assets: Assets
    public var throttling: Throttling

    /// Pending changes over all zones.
    public var pendingCount: Int { zones.reduce(0) { $0 + $1.pendingCount } }

    /// One zone of the local store.
    public struct Zone: Sendable, Codable, Hashable {
        /// The zone's local name (``Nimbus/ZoneID/localZoneName``).
        public var name: String
        /// All pending changes of the zone.
        public var pendingCount: Int
        /// The oldest pending changes (at most `pendingLimit`), oldest first.
        public var pending: [PendingEntry]
        public var lastFetch: Activity?
        public var lastSend: Activity?
        public var token: TokenState
    }

    /// A change waiting in the outbox.
    public struct PendingEntry: Sendable, Codable, Hashable {
        public var recordName: String
        public var kind: PendingChange.Kind
        public var recordType: String
        /// When the app first queued it (the store's clock).
        public var enqueuedAt: Date
        /// Seconds since ``enqueuedAt``.
        public var ageSeconds: Double
        /// Sends that did not take it off the outbox (failed, or sent back to merge).
        public var attempts: Int
        /// The last of those sends' errors; `nil` when it has not failed.
        public var lastError: RecordedError?
        public var lastAttemptAt: Date?
        /// When the engine sends it again, while it backs off (a `retryAfter`, a backoff).
        public var nextRetryAt: Date?
    }

    /// How a fetch or a send ended.
    public struct Activity: Sendable, Codable, Hashable {
        public var at: Date
        /// `nil` when it succeeded.
        public var error: RecordedError?
        public var succeeded: Bool { error == nil }
    }

    /// A zone's change token.
    public struct TokenState: Sendable, Codable, Hashable {
        public var hasToken: Bool
        /// When the last fetched page's token was committed (the store's clock).
        public var savedAt: Date?
        /// How many times the server answered that the token expired, so the zone was read
        /// again from the start and reconciled.
        public var expiries: Int
    }

    /// A database subscription the engine relies on.
    public struct Subscription: Sendable, Codable, Hashable {
        public enum Database: String, Sendable, Codable, Hashable { case `private`, shared }
        public enum State: String, Sendable, Codable, Hashable {
            /// Saved on the server by this engine since it was made.
            case created
            /// Saved by an earlier run (recorded in the store).
            case known
            /// Configured but not saved yet: setup did not finish (``SyncEngine/start()``
            /// saves it); pushes do not arrive until then.
            case missing
        }
        public var database: Database
        public var id: String
        public var state: State
        /// When it was saved, if known.
        public var savedAt: Date?
    }

    /// The push channel's state.
    public struct PushConnection: Sendable, Codable, Hashable {
        public var isConnected: Bool
        /// Since when it is connected (or disconnected).
        public var since: Date?
        public var lastPushAt: Date?
        public var pushesReceived: Int
        /// Connections after the first.
        public var reconnects: Int
        /// Why it last dropped.
        public var lastError: RecordedError?
        /// When it tries again, while disconnected; `nil` when it gave up.
        public var nextAttemptAt: Date?
    }

    /// A given-up change without its fields (``GivenUpChange/summary``).
    public struct GivenUp: Sendable, Codable, Hashable {
        public var id: Int64
        public var account: String
        public var zoneName: String
        public var recordName: String
        public var kind: PendingChange.Kind
        public var recordType: String
        public var reason: GivenUpChange.Reason
        public var error: RecordedError?
        public var givenUpAt: Date
        public var attempts: Int
    }

    /// The quarantine: given-up changes and server copies of previous accounts.
    public struct Quarantine: Sendable, Codable, Hashable {
        public var count: Int
        /// Counts by ``GivenUpChange/Reason`` raw value (server copies of a previous account
        /// count as `accountChanged`).
        public var byReason: [String: Int]
        /// The records, oldest first (at most `pendingLimit`).
        public var records: [LocalRecordID]
    }

    /// Conflicts the merge resolved (the conflict log, ``LocalStore/conflictLog(limit:)``).
    public struct Conflicts: Sendable, Codable, Hashable {
        /// Records that met a conflict.
        public var count: Int
        /// Fields resolved, by winner (``FieldResolution/Winner`` raw value: `server`,
        /// `client`, `merged`).
        public var fieldsByWinner: [String: Int]
        /// The last few, newest first.
        public var recent: [ConflictRecord]
    }

    /// Asset files waiting to move.
    public struct Assets: Sendable, Codable, Hashable {
        /// Files of pending saves not uploaded yet.
        public var pendingUploads: Int
        /// Files uploaded whose records' saves have not gone out yet.
        public var uploadedAwaitingSave: Int
        /// Downloads running now.
        public var downloadsInFlight: Int
        public var cachedFiles: Int
        public var cachedBytes: Int64
    }

    /// The server's throttling, as the engine met it.
    public struct Throttling: Sendable, Codable, Hashable {
        /// The last `THROTTLED` answer (``Nimbus/NimbusError/Code/requestRateLimited``).
        public var lastThrottledAt: Date?
        /// The `retryAfter` it carried, in seconds.
        public var lastRetryAfterSeconds: Double?
        /// `THROTTLED` answers met so far.
        public var throttledCount: Int
        /// The end of the wait the engine is in (or was last in) before trying again.
        public var backoffUntil: Date?
        /// The error that wait follows.
        public var backoffError: RecordedError?

        public init() {
            throttledCount = 0
        }

        /// Whether the engine is waiting at `date`.
        public func isBackingOff(at date: Date) -> Bool { backoffUntil.map { $0 > date } ?? false }
    }
}
