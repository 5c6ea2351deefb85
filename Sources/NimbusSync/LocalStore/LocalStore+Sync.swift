import Foundation
import GRDB
import Nimbus
import NimbusProtocol

/// The engine's reads and writes of the local store, inside its transactions.
extension LocalStore {
    /// Tokens are opaque: kept as their Codable form.
    static func encodeToken(_ token: ServerChangeToken) -> String? {
        (try? JSONEncoder().encode(token)).map { String(decoding: $0, as: UTF8.self) }
    }

    static func decodeToken(_ text: String) -> ServerChangeToken? {
        try? JSONDecoder().decode(ServerChangeToken.self, from: Data(text.utf8))
    }

    struct ServerCopy {
        var recordType: String
        var fields: [String: FieldValue]
        var tag: String
        var system: Data
    }

    static func state(_ db: GRDB.Database, _ key: String) throws -> String? {
        try String.fetchOne(db, sql: "SELECT value FROM nimbus_state WHERE key = ?", arguments: [key])
    }

    static func setState(_ db: GRDB.Database, _ key: String, _ value: String?) throws {
        if let value {
            try db.execute(
                sql: "INSERT OR REPLACE INTO nimbus_state (key, value) VALUES (?, ?)", arguments: [key, value])
        } else {
            try db.execute(sql: "DELETE FROM nimbus_state WHERE key = ?", arguments: [key])
        }
    }

    static func zoneToken(_ db: GRDB.Database, _ zone: String) throws -> ServerChangeToken? {
        try String.fetchOne(db, sql: "SELECT token FROM nimbus_zones WHERE zone = ?", arguments: [zone])
            .flatMap(decodeToken)
    }

    static func setZoneToken(_ db: GRDB.Database, _ zone: String, _ token: ServerChangeToken?) throws {
        try db.execute(
            sql: """
                INSERT INTO nimbus_zones (zone, token, confirmed) VALUES (?, ?, 1)
                ON CONFLICT(zone) DO UPDATE SET token = excluded.token
                """,
            arguments: [zone, token.flatMap(encodeToken)])
    }

    static func serverCopy(_ db: GRDB.Database, zone: String, name: String) throws -> ServerCopy? {
        // Cached statements: these run once per record of every fetched page.
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT type, fields, tag, system FROM nimbus_records WHERE zone = ? AND name = ?"),
            arguments: [zone, name]
        ).map { row in
            ServerCopy(
                recordType: row["type"], fields: try [String: FieldValue](jsonText: row["fields"]), tag: row["tag"],
                system: row["system"])
        }
    }

    /// Stores the server's copy of a record. `fromFeed` is false for copies learned from a
    /// send or a conflict; see the `unconfirmed` column.
    static func putServerCopy(_ db: GRDB.Database, _ record: Nimbus.Record, fromFeed: Bool) throws {
        try db.cachedStatement(
            sql: """
                INSERT OR REPLACE INTO nimbus_records (zone, name, type, tag, fields, system, unconfirmed)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(
            arguments: [
                record.id.zoneID.zoneName, record.id.recordName, record.recordType, record.recordChangeTag ?? "",
                record.fieldDictionary.jsonText, record.encodeSystemFields(), !fromFeed,
            ])
    }

    static func confirm(_ db: GRDB.Database, zone: String, name: String) throws {
        try db.execute(
            sql: "UPDATE nimbus_records SET unconfirmed = 0 WHERE zone = ? AND name = ? AND unconfirmed = 1",
            arguments: [zone, name])
    }

    static func unconfirmed(_ db: GRDB.Database, zone: String) throws -> [String] {
        try String.fetchAll(
            db, sql: "SELECT name FROM nimbus_records WHERE zone = ? AND unconfirmed = 1", arguments: [zone])
    }

    static func removeServerCopy(_ db: GRDB.Database, zone: String, name: String) throws {
        try db.execute(sql: "DELETE FROM nimbus_records WHERE zone = ? AND name = ?", arguments: [zone, name])
    }

    static func outboxEntry(_ db: GRDB.Database, zone: String, name: String) throws -> PendingChange? {
        try Outbox.entry(db, zone: zone, name: name)
    }

    /// Removes an outbox entry if nobody changed it since `revision` was read.
    static func clearOutbox(_ db: GRDB.Database, zone: String, name: String, revision: Int64) throws {
        try db.execute(
            sql: "DELETE FROM nimbus_outbox WHERE zone = ? AND name = ? AND revision = ?",
            arguments: [zone, name, revision])
    }

    static func removeOutbox(_ db: GRDB.Database, zone: String, name: String) throws {
        try db.execute(sql: "DELETE FROM nimbus_outbox WHERE zone = ? AND name = ?", arguments: [zone, name])
    }

    static func logConflict(_ db: GRDB.Database, zone: String, name: String, resolutions: [FieldResolution]) throws
        -> ConflictRecord
    {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let text = String(decoding: try JSONEncoder().encode(resolutions), as: UTF8.self)
        try db.execute(
            sql: "INSERT INTO nimbus_conflicts (zone, name, resolved_at, resolutions) VALUES (?, ?, ?, ?)",
            arguments: [zone, name, now, text])
        return ConflictRecord(zoneName: zone, recordName: name, resolvedAt: now, resolutions: resolutions)
    }

    /// Rebases a pending save onto a newer server record: three-way merge (ancestor = the
    /// previous server copy), store the server record as the new copy, and keep in the outbox
    /// only what still differs from it. Returns the merged fields, whether anything is still
    /// pending, and the conflict-log entry when both sides changed a field.
    static func rebase(
        _ db: GRDB.Database, pending: PendingChange, onto server: Nimbus.Record, previousCopy: ServerCopy?,
        rules: MergeRules, fromFeed: Bool
    ) throws -> (fields: [String: FieldValue], stillPending: Bool, conflict: ConflictRecord?) {
        let zone = pending.zoneName, name = pending.recordName
        let serverFields = server.fieldDictionary
        let (merged, resolutions) = ThreeWayMerge.merge(
            ancestor: previousCopy?.fields ?? [:], local: pending.fields, server: serverFields, rules: rules)
        try putServerCopy(db, server, fromFeed: fromFeed)
        let changed = Set(merged.keys).union(serverFields.keys).filter { merged[$0] != serverFields[$0] }
        if changed.isEmpty {
            try removeOutbox(db, zone: zone, name: name)
        } else {
            try Outbox.rewrite(db, zone: zone, name: name, fields: merged, changedKeys: changed)
        }
        let conflict =
            resolutions.isEmpty ? nil : try logConflict(db, zone: zone, name: name, resolutions: resolutions)
        return (merged, !changed.isEmpty, conflict)
    }

    /// Moves every local copy and pending change to the quarantine under `account`.
    static func quarantineAll(_ db: GRDB.Database, account: String) throws {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try db.execute(
            sql: """
                INSERT INTO nimbus_quarantine (account, kind, zone, name, type, fields, quarantined_at)
                SELECT ?, 'server', zone, name, type, fields, ? FROM nimbus_records
                """,
            arguments: [account, now])
        try db.execute(
            sql: """
                INSERT INTO nimbus_quarantine (account, kind, zone, name, type, fields, quarantined_at)
                SELECT ?, kind, zone, name, type, fields, ? FROM nimbus_outbox
                """,
            arguments: [account, now])
        try db.execute(sql: "DELETE FROM nimbus_records")
        try db.execute(sql: "DELETE FROM nimbus_outbox")
        try db.execute(sql: "DELETE FROM nimbus_zones")
        try db.execute(sql: "DELETE FROM nimbus_state WHERE key != 'account'")
    }
}

extension Outbox {
    static func entry(_ db: GRDB.Database, zone: String, name: String) throws -> PendingChange? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM nimbus_outbox WHERE zone = ? AND name = ?"), arguments: [zone, name])
            .map(pendingChange)
    }

    static func pendingChange(_ row: Row) throws -> PendingChange {
        let keysText: String = row["changed_keys"]
        let keys = (try? JSON.parse(keysText))?.array?.compactMap(\.string) ?? []
        return PendingChange(
            zoneName: row["zone"], recordName: row["name"],
            kind: PendingChange.Kind(rawValue: row["kind"]) ?? .save, recordType: row["type"],
            fields: try [String: FieldValue](jsonText: row["fields"]), changedKeys: Set(keys),
            baseChangeTag: row["base_tag"], revision: row["revision"])
    }

    /// Rewrites a pending save after a merge, without bumping its revision.
    static func rewrite(_ db: GRDB.Database, zone: String, name: String, fields: [String: FieldValue], changedKeys: Set<String>)
        throws
    {
        try db.execute(
            sql: "UPDATE nimbus_outbox SET fields = ?, changed_keys = ? WHERE zone = ? AND name = ?",
            arguments: [
                fields.jsonText, JSON.array(changedKeys.sorted().map { .string($0) }).serialized(), zone, name,
            ])
    }
}

extension Nimbus.Record {
    /// All fields as a dictionary.
    var fieldDictionary: [String: FieldValue] {
        var fields: [String: FieldValue] = [:]
        for key in allKeys { fields[key] = fieldValue(forKey: key) }
        return fields
    }
}
