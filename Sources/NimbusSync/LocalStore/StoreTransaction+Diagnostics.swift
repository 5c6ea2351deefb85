import Foundation
import GRDB
import Nimbus
import NimbusProtocol

/// The diagnostics' tables: attempts of outbox entries, given-up changes, each zone's last
/// fetch and send.
extension StoreTransaction {
    // MARK: - Giving up

    /// Moves a record's pending change to the quarantine as given up for `reason`, and
    /// reports it (``SyncEvent/gaveUp(_:)``) once the transaction commits. The caller removes
    /// the outbox entry.
    func giveUp(zone: String, name: String, reason: GivenUpChange.Reason, error: RecordedError?) throws {
        guard let row = try Row.fetchOne(
            db, sql: "SELECT * FROM nimbus_outbox WHERE zone = ? AND name = ?", arguments: [zone, name])
        else { return }
        try insertGivenUp(row, account: try state(StateKey.account) ?? "", reason: reason, error: error)
    }

    /// Gives up every outbox entry (an account switch), for `account`.
    func giveUpOutbox(account: String) throws {
        for row in try Row.fetchAll(db, sql: "SELECT * FROM nimbus_outbox ORDER BY enqueued_at, zone, name") {
            try insertGivenUp(row, account: account, reason: .accountChanged, error: nil)
        }
    }

    private func insertGivenUp(_ row: Row, account: String, reason: GivenUpChange.Reason, error: RecordedError?) throws {
        let now = nowMilliseconds
        let kept = error ?? RecordedError(jsonText: row["last_error"])
        // An error passed in is the answer to a send of the change: one more attempt.
        let attempts = (row["attempts"] as Int) + (error == nil ? 0 : 1)
        try db.execute(
            sql: """
                INSERT INTO nimbus_quarantine
                    (account, kind, zone, name, type, fields, quarantined_at, reason, error, changed_keys, base_tag,
                     parent, attempts)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                account, row["kind"] as DatabaseValue, row["zone"] as DatabaseValue, row["name"] as DatabaseValue,
                row["type"] as DatabaseValue, row["fields"] as DatabaseValue, now, reason.rawValue, kept?.jsonText,
                row["changed_keys"] as DatabaseValue, row["base_tag"] as DatabaseValue, row["parent"] as DatabaseValue,
                attempts,
            ])
        changes.gaveUp(
            GivenUpChange(
                id: db.lastInsertedRowID, account: account, change: try Outbox.pendingChange(row), reason: reason,
                error: kept, givenUpAt: Date(milliseconds: now), attempts: attempts))
    }

    /// The given-up changes (the quarantine's pending changes), oldest first.
    func givenUp(ids: [Int64]? = nil) throws -> [GivenUpChange] {
        let rows: [Row]
        if let ids {
            let list = "[" + ids.map(String.init).joined(separator: ",") + "]"
            rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM nimbus_quarantine WHERE kind != 'server' AND id IN (SELECT value FROM json_each(?))
                    ORDER BY id
                    """,
                arguments: [list])
        } else {
            rows = try Row.fetchAll(db, sql: "SELECT * FROM nimbus_quarantine WHERE kind != 'server' ORDER BY id")
        }
        return try rows.map { row in
            let keysText: String? = row["changed_keys"]
            let keys = keysText.flatMap { try? JSON.parse($0) }?.array?.compactMap(\.string) ?? []
            let change = PendingChange(
                zoneName: row["zone"], recordName: row["name"],
                kind: PendingChange.Kind(rawValue: row["kind"]) ?? .save, recordType: row["type"],
                fields: try [String: FieldValue](jsonText: row["fields"]), changedKeys: Set(keys),
                baseChangeTag: row["base_tag"], revision: 0, parent: row["parent"])
            let reason: String = row["reason"]
            return GivenUpChange(
                id: row["id"], account: row["account"], change: change,
                reason: GivenUpChange.Reason(rawValue: reason) ?? .unrecorded, error: RecordedError(jsonText: row["error"]),
                givenUpAt: Date(milliseconds: row["quarantined_at"]), attempts: row["attempts"])
        }
    }

    func removeFromQuarantine(ids: [Int64]) throws {
        for id in ids { try db.execute(sql: "DELETE FROM nimbus_quarantine WHERE id = ?", arguments: [id]) }
    }

    // MARK: - Attempts

    /// A send of the record's pending change did not take it off the outbox: one more
    /// attempt, with its error (`nil`: sent, but edited meanwhile, so still pending).
    func noteAttempt(zone: String, name: String, error: RecordedError?, at: Date) throws {
        guard let error else {
            try db.execute(
                sql: """
                    UPDATE nimbus_outbox SET attempts = 0, last_error = NULL, last_attempt_at = NULL, next_attempt_at = NULL
                    WHERE zone = ? AND name = ?
                    """,
                arguments: [zone, name])
            return
        }
        try db.execute(
            sql: """
                UPDATE nimbus_outbox SET attempts = attempts + 1, last_error = ?, last_attempt_at = ?, next_attempt_at = NULL
                WHERE zone = ? AND name = ?
                """,
            arguments: [error.jsonText, at.milliseconds, zone, name])
    }

    /// When the engine sends these entries again, while it backs off.
    func setNextAttempt(zone: String, names: [String], at: Date) throws {
        for name in names {
            try db.execute(
                sql: "UPDATE nimbus_outbox SET next_attempt_at = ? WHERE zone = ? AND name = ?",
                arguments: [at.milliseconds, zone, name])
        }
    }

    // MARK: - Activity

    enum ActivityKind { case fetch, send }

    /// Records how a fetch or send of `scope` (a zone's local name; `""` for the database's
    /// changes) ended.
    func recordActivity(_ kind: ActivityKind, scope: String, at: Date, error: RecordedError?) throws {
        let (time, failure) = kind == .fetch ? ("fetched_at", "fetch_error") : ("sent_at", "send_error")
        try db.execute(
            sql: """
                INSERT INTO nimbus_activity (scope, \(time), \(failure)) VALUES (?, ?, ?)
                ON CONFLICT(scope) DO UPDATE SET \(time) = excluded.\(time), \(failure) = excluded.\(failure)
                """,
            arguments: [scope, at.milliseconds, error?.jsonText])
    }

    /// The server answered that the token of `scope` expired.
    func noteTokenExpired(scope: String) throws {
        try db.execute(
            sql: """
                INSERT INTO nimbus_activity (scope, token_expiries) VALUES (?, 1)
                ON CONFLICT(scope) DO UPDATE SET token_expiries = token_expiries + 1
                """,
            arguments: [scope])
    }
}

extension Date {
    /// Milliseconds since the epoch, as the store keeps times.
    var milliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }

    init(milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
