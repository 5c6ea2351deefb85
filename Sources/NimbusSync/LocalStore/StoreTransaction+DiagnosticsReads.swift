import Foundation
import GRDB
import Nimbus
import NimbusProtocol

/// The local store's side of ``SyncDiagnostics``, read in one snapshot.
extension StoreTransaction {
    /// The state key of the persisted ``SyncDiagnostics/Throttling`` (kept across account
    /// switches, with the other `diagnostics.` keys).
    static let throttlingKey = "diagnostics.throttling"

    /// The state key of when a database subscription was saved.
    static func subscriptionSavedKey(_ database: SyncDiagnostics.Subscription.Database) -> String {
        "diagnostics.subscription.\(database.rawValue).savedAt"
    }

    /// The activity scope of the shared database's `changes/database`.
    static let sharedDatabaseScope = "(shared database)"

    func zoneDiagnostics(_ zone: String, pendingLimit: Int, now: Date) throws -> SyncDiagnostics.Zone {
        let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM nimbus_outbox WHERE zone = ?", arguments: [zone]) ?? 0
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT name, kind, type, enqueued_at, attempts, last_error, last_attempt_at, next_attempt_at
                FROM nimbus_outbox WHERE zone = ? ORDER BY enqueued_at, name LIMIT ?
                """,
            arguments: [zone, pendingLimit])
        let pending = rows.map { row -> SyncDiagnostics.PendingEntry in
            let enqueued = Date(milliseconds: row["enqueued_at"])
            return SyncDiagnostics.PendingEntry(
                recordName: row["name"], kind: PendingChange.Kind(rawValue: row["kind"]) ?? .save, recordType: row["type"],
                enqueuedAt: enqueued, ageSeconds: max(0, now.timeIntervalSince(enqueued)), attempts: row["attempts"],
                lastError: RecordedError(jsonText: row["last_error"]),
                lastAttemptAt: (row["last_attempt_at"] as Int64?).map(Date.init(milliseconds:)),
                nextRetryAt: (row["next_attempt_at"] as Int64?).map(Date.init(milliseconds:)))
        }
        let activity = try self.activity(scope: zone)
        let token = try Row.fetchOne(
            db, sql: "SELECT token IS NOT NULL AS has, token_saved_at FROM nimbus_zones WHERE zone = ?", arguments: [zone])
        return SyncDiagnostics.Zone(
            name: zone, pendingCount: count, pending: pending, lastFetch: activity.fetch, lastSend: activity.send,
            token: SyncDiagnostics.TokenState(
                hasToken: token?["has"] ?? false,
                savedAt: (token?["token_saved_at"] as Int64?).map(Date.init(milliseconds:)),
                expiries: activity.expiries))
    }

    func activity(scope: String) throws -> (fetch: SyncDiagnostics.Activity?, send: SyncDiagnostics.Activity?, expiries: Int) {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM nimbus_activity WHERE scope = ?", arguments: [scope]) else {
            return (nil, nil, 0)
        }
        let fetch = (row["fetched_at"] as Int64?).map {
            SyncDiagnostics.Activity(at: Date(milliseconds: $0), error: RecordedError(jsonText: row["fetch_error"]))
        }
        let send = (row["sent_at"] as Int64?).map {
            SyncDiagnostics.Activity(at: Date(milliseconds: $0), error: RecordedError(jsonText: row["send_error"]))
        }
        return (fetch, send, row["token_expiries"])
    }

    /// The zones with pending changes (besides the configured and shared zones, which the
    /// caller names: a shared zone that left the device keeps no diagnostics).
    func zonesWithDiagnostics() throws -> [String] {
        try String.fetchAll(db, sql: "SELECT DISTINCT zone FROM nimbus_outbox ORDER BY 1")
    }

    func quarantineDiagnostics(limit: Int) throws -> SyncDiagnostics.Quarantine {
        let byReason = try Row.fetchAll(db, sql: "SELECT reason, COUNT(*) AS n FROM nimbus_quarantine GROUP BY reason")
        let records = try Row.fetchAll(db, sql: "SELECT zone, name FROM nimbus_quarantine ORDER BY id LIMIT ?", arguments: [limit])
        return SyncDiagnostics.Quarantine(
            count: byReason.reduce(0) { $0 + ($1["n"] as Int) },
            byReason: Dictionary(uniqueKeysWithValues: byReason.map { ($0["reason"] as String, $0["n"] as Int) }),
            records: records.map { LocalRecordID(zoneName: $0["zone"], recordName: $0["name"]) })
    }

    func conflictDiagnostics(recent: Int) throws -> SyncDiagnostics.Conflicts {
        let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM nimbus_conflicts") ?? 0
        let winners = try Row.fetchAll(
            db,
            sql: """
                SELECT json_extract(r.value, '$.winner') AS winner, COUNT(*) AS n
                FROM nimbus_conflicts c, json_each(c.resolutions) r GROUP BY 1
                """)
        let rows = try Row.fetchAll(db, sql: "SELECT * FROM nimbus_conflicts ORDER BY id DESC LIMIT ?", arguments: [recent])
        return SyncDiagnostics.Conflicts(
            count: count,
            fieldsByWinner: Dictionary(
                winners.compactMap { row in (row["winner"] as String?).map { ($0, row["n"] as Int) } },
                uniquingKeysWith: +),
            recent: rows.map { row in
                let text: String = row["resolutions"]
                return ConflictRecord(
                    zoneName: row["zone"], recordName: row["name"], resolvedAt: row["resolved_at"],
                    resolutions: (try? JSONDecoder().decode([FieldResolution].self, from: Data(text.utf8))) ?? [])
            })
    }

    /// The asset counts (``SyncDiagnostics/Assets/downloadsInFlight`` is the engine's).
    func assetDiagnostics() throws -> SyncDiagnostics.Assets {
        var localFiles = 0
        for text in try String.fetchAll(db, sql: "SELECT fields FROM nimbus_outbox WHERE kind = 'save'") {
            for value in try [String: FieldValue](jsonText: text).values {
                localFiles += value.assets.filter { $0.fileChecksum == Nimbus.Asset.localFileChecksum }.count
            }
        }
        let uploaded = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM nimbus_asset_uploads WHERE uploaded IS NOT NULL") ?? 0
        let cache = try Row.fetchOne(db, sql: "SELECT COUNT(*) AS n, COALESCE(SUM(size), 0) AS bytes FROM nimbus_asset_cache")
        return SyncDiagnostics.Assets(
            pendingUploads: max(0, localFiles - uploaded), uploadedAwaitingSave: uploaded, downloadsInFlight: 0,
            cachedFiles: cache?["n"] ?? 0, cachedBytes: cache?["bytes"] ?? 0)
    }

    func persistedThrottling() throws -> SyncDiagnostics.Throttling? {
        try state(Self.throttlingKey).flatMap { try? JSONDecoder().decode(SyncDiagnostics.Throttling.self, from: Data($0.utf8)) }
    }

    func persistThrottling(_ throttling: SyncDiagnostics.Throttling) throws {
        let text = String(decoding: try JSONEncoder().encode(throttling), as: UTF8.self)
        try setState(Self.throttlingKey, text)
    }
}
