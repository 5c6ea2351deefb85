import Foundation
import GRDB
import Nimbus
import NimbusProtocol
import NimbusSQLiteBinding

/// The engine's reads and writes of the local store, inside one transaction of
/// ``LocalStore`` (``LocalStore/transaction(_:)`` or ``LocalStore/reading(_:)``): the only
/// place that knows the store's tables.
struct StoreTransaction {
    let db: GRDB.Database
    /// The records this transaction changed, for ``LocalStore/changes()``.
    let changes: ChangeTracker
    let now: @Sendable () -> Date

    /// The app's outbox API, in this transaction.
    var outbox: Outbox { Outbox(db: db, changes: changes, now: now) }

    var nowMilliseconds: Int64 { Int64(now().timeIntervalSince1970 * 1000) }

    // MARK: - Engine state

    /// Keys of the engine's state.
    enum StateKey {
        static let account = "account"
        static let databaseToken = "databaseToken"
        static let zonesReady = "setup.zones"
        static let subscriptionReady = "setup.subscription"
        static let sharedDatabaseToken = "sharedDatabaseToken"
        static let sharedSubscriptionReady = "setup.sharedSubscription"
    }

    func state(_ key: String) throws -> String? {
        try String.fetchOne(db, sql: "SELECT value FROM nimbus_state WHERE key = ?", arguments: [key])
    }

    func setState(_ key: String, _ value: String?) throws {
        if let value {
            try db.execute(
                sql: "INSERT OR REPLACE INTO nimbus_state (key, value) VALUES (?, ?)", arguments: [key, value])
        } else {
            try db.execute(sql: "DELETE FROM nimbus_state WHERE key = ?", arguments: [key])
        }
    }

    func databaseToken() throws -> ServerChangeToken? {
        try state(StateKey.databaseToken).flatMap(Self.decodeToken)
    }

    func setDatabaseToken(_ token: ServerChangeToken?) throws {
        try setState(StateKey.databaseToken, token.flatMap(Self.encodeToken))
    }

    func zoneToken(_ zone: String) throws -> ServerChangeToken? {
        try String.fetchOne(db, sql: "SELECT token FROM nimbus_zones WHERE zone = ?", arguments: [zone])
            .flatMap(Self.decodeToken)
    }

    func setZoneToken(_ zone: String, _ token: ServerChangeToken?) throws {
        try db.execute(
            sql: """
                INSERT INTO nimbus_zones (zone, token, confirmed, token_saved_at) VALUES (?, ?, 1, ?)
                ON CONFLICT(zone) DO UPDATE SET token = excluded.token, token_saved_at = excluded.token_saved_at
                """,
            arguments: [zone, token.flatMap(Self.encodeToken), token == nil ? nil : nowMilliseconds])
    }

    /// The local names of the shared zones the device holds (a token, a copy or a pending
    /// change): those with an owner (``ZoneID/localZoneName``).
    func sharedZoneNames() throws -> [String] {
        let separator = "%" + String(ZoneID.localNameSeparator) + "%"
        return try String.fetchAll(
            db,
            sql: """
                SELECT zone FROM nimbus_zones WHERE zone LIKE ?1
                UNION SELECT zone FROM nimbus_records WHERE zone LIKE ?1
                UNION SELECT zone FROM nimbus_outbox WHERE zone LIKE ?1
                ORDER BY 1
                """,
            arguments: [separator])
    }

    /// Forgets a zone's token (the zone is no longer synced).
    func forgetZone(_ zone: String) throws {
        try db.execute(sql: "DELETE FROM nimbus_zones WHERE zone = ?", arguments: [zone])
    }

    /// Tokens are opaque: kept as their Codable form.
    static func encodeToken(_ token: ServerChangeToken) -> String? {
        (try? JSONEncoder().encode(token)).map { String(decoding: $0, as: UTF8.self) }
    }

    static func decodeToken(_ text: String) -> ServerChangeToken? {
        try? JSONDecoder().decode(ServerChangeToken.self, from: Data(text.utf8))
    }

    // MARK: - Reading a record's state

    /// The record's server copy and pending change. `noPending` skips the outbox lookup when
    /// the caller knows the zone has no pending change.
    func localState(zone: String, name: String, noPending: Bool = false) throws -> LocalState {
        try localState(zone: zone, name: name, copy: try serverCopy(zone: zone, name: name), noPending: noPending)
    }

    /// The record's state, its server copy read already.
    func localState(zone: String, name: String, copy: ServerCopy?, noPending: Bool) throws -> LocalState {
        LocalState(copy: copy, pending: noPending ? nil : try Outbox.entry(db, zone: zone, name: name))
    }

    func serverCopy(zone: String, name: String) throws -> ServerCopy? {
        // Cached statements: these run once per record of every fetched page.
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT type, fields, tag, system FROM nimbus_records WHERE zone = ? AND name = ?"),
            arguments: [zone, name]
        ).map(Self.serverCopy)
    }

    /// The server copies of the named records of a zone that the device has, by name: one
    /// query for a whole page of names (the names travel as one JSON array).
    func serverCopies(zone: String, names: [String]) throws -> [String: ServerCopy] {
        guard !names.isEmpty else { return [:] }
        var list: [UInt8] = [UInt8(ascii: "[")]
        list.reserveCapacity(names.count * 16 + 2)
        for (offset, name) in names.enumerated() {
            if offset > 0 { list.append(UInt8(ascii: ",")) }
            JSON.writeString(name, into: &list)
        }
        list.append(UInt8(ascii: "]"))
        let rows = try Row.fetchCursor(
            db.cachedStatement(
                sql: """
                    SELECT name, type, fields, tag, system FROM nimbus_records
                    WHERE zone = ? AND name IN (SELECT value FROM json_each(?))
                    """),
            arguments: [zone, String(decoding: list, as: UTF8.self)])
        var copies: [String: ServerCopy] = [:]
        while let row = try rows.next() { copies[row["name"]] = try Self.serverCopy(row) }
        return copies
    }

    private static func serverCopy(_ row: Row) throws -> ServerCopy {
        ServerCopy(
            recordType: row["type"], fields: try [String: FieldValue](jsonText: row["fields"]), tag: row["tag"],
            system: row["system"])
    }

    /// Whether the zone has any pending change (most fetched pages meet an empty outbox).
    func hasPendingChanges(zone: String) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM nimbus_outbox WHERE zone = ?)"), arguments: [zone])
            ?? true
    }

    /// The names of the zone's server copies; with `onlyUnconfirmed`, only those learned from
    /// a send or a conflict that the change feed has not returned yet.
    func copyNames(zone: String, onlyUnconfirmed: Bool = false) throws -> [String] {
        try String.fetchAll(
            db, sql: "SELECT name FROM nimbus_records WHERE zone = ? AND (? = 0 OR unconfirmed = 1)",
            arguments: [zone, onlyUnconfirmed])
    }

    /// Every record of the zone the device holds a copy or a pending change of.
    func zoneStates(zone: String) throws -> [String: LocalState] {
        var states: [String: LocalState] = [:]
        for name in try copyNames(zone: zone) { states[name] = LocalState(copy: try serverCopy(zone: zone, name: name)) }
        let pending = try Row.fetchAll(db, sql: "SELECT * FROM nimbus_outbox WHERE zone = ?", arguments: [zone])
        for row in pending {
            let change = try Outbox.pendingChange(row)
            states[change.recordName, default: LocalState()].pending = change
        }
        return states
    }

    /// The server's change tags of the zone's copies, and the names with a pending change.
    func zoneSummary(zone: String) throws -> (tags: [String: String], pending: Set<String>) {
        let rows = try Row.fetchAll(db, sql: "SELECT name, tag FROM nimbus_records WHERE zone = ?", arguments: [zone])
        let pending = try String.fetchAll(db, sql: "SELECT name FROM nimbus_outbox WHERE zone = ?", arguments: [zone])
        return (Dictionary(uniqueKeysWithValues: rows.map { ($0["name"] as String, $0["tag"] as String) }), Set(pending))
    }

    // MARK: - The outbox in send order

    /// Where a send is in the outbox: entries after it in send order come next.
    struct OutboxPosition: Sendable {
        var zone: String
        var enqueuedAt: Int64
        var name: String
    }

    /// Up to `limit` pending changes after `position`, in send order (by zone, oldest first;
    /// an indexed range read, so a drain reads each entry once per pass).
    func outboxPage(after position: OutboxPosition?, limit: Int) throws -> [(PendingChange, OutboxPosition)] {
        let rows: [Row]
        if let position {
            rows = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT * FROM nimbus_outbox WHERE (zone, enqueued_at, name) > (?, ?, ?)
                        ORDER BY zone, enqueued_at, name LIMIT ?
                        """),
                arguments: [position.zone, position.enqueuedAt, position.name, limit])
        } else {
            rows = try Row.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM nimbus_outbox ORDER BY zone, enqueued_at, name LIMIT ?"),
                arguments: [limit])
        }
        return try rows.map { row in
            (try Outbox.pendingChange(row), OutboxPosition(zone: row["zone"], enqueuedAt: row["enqueued_at"], name: row["name"]))
        }
    }

    // MARK: - Applying decisions

    /// Applies a ``Decision``'s actions to one record; returns the conflicts it logged.
    func apply(_ actions: [StoreAction], zone: String, name: String) throws -> [ConflictRecord] {
        var conflicts: [ConflictRecord] = []
        for action in actions {
            switch action {
            case .putCopy(let record, let confirmed):
                try putCopy(record, confirmed: confirmed)
            case .confirmCopy:
                try db.execute(
                    sql: "UPDATE nimbus_records SET unconfirmed = 0 WHERE zone = ? AND name = ? AND unconfirmed = 1",
                    arguments: [zone, name])
                continue  // the app's view did not change
            case .removeCopy:
                try db.execute(sql: "DELETE FROM nimbus_records WHERE zone = ? AND name = ?", arguments: [zone, name])
            case .removeOutbox:
                try db.execute(sql: "DELETE FROM nimbus_outbox WHERE zone = ? AND name = ?", arguments: [zone, name])
            case .rewriteOutbox(let fields, let changedKeys):
                try db.execute(
                    sql: "UPDATE nimbus_outbox SET fields = ?, changed_keys = ? WHERE zone = ? AND name = ?",
                    arguments: [fields.jsonText, Outbox.keysJSON(changedKeys), zone, name])
            case .lockDelete(let tag):
                try db.execute(
                    sql: "UPDATE nimbus_outbox SET base_tag = ? WHERE zone = ? AND name = ? AND kind = 'delete'",
                    arguments: [tag, zone, name])
            case .enqueueSave(let recordType, let fields):
                try outbox.upsert(
                    zone: zone, name: name, kind: .save, type: recordType, fields: fields, changedKeys: Set(fields.keys))
            case .quarantinePending(let reason, let error):
                try giveUp(zone: zone, name: name, reason: reason, error: error)
            case .logConflict(let resolutions):
                conflicts.append(try logConflict(zone: zone, name: name, resolutions: resolutions))
                continue
            case .forgetUploads:
                try forgetUploads(zone: zone, name: name)
                continue  // the app's view did not change
            }
            changes.insert(zone: zone, name: name)
        }
        return conflicts
    }

    /// Stores the server's copy of a record; `confirmed` when it came from the change feed
    /// (see the `unconfirmed` column).
    private func putCopy(_ record: Nimbus.Record, confirmed: Bool) throws {
        // Once per record of every fetched page: bound through SQLite's C API (``BoundStatement``).
        var statement = BoundStatement(
            try db.cachedStatement(
                sql: """
                    INSERT OR REPLACE INTO nimbus_records (zone, name, type, tag, fields, system, unconfirmed, parent)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """))
        statement.bind(record.id.zoneID.localZoneName)
        statement.bind(record.id.recordName)
        statement.bind(record.recordType)
        statement.bind(record.recordChangeTag ?? "")
        statement.bind(text: NimbusProtocol.Record.fieldsJSONBytes(record.fieldDictionary))
        statement.bind(blob: record.encodeSystemFieldsBytes())
        statement.bind(!confirmed)
        statement.bind(record.parent?.recordName)
        try statement.execute()
    }

    private func logConflict(zone: String, name: String, resolutions: [FieldResolution]) throws -> ConflictRecord {
        let now = nowMilliseconds
        let text = String(decoding: try JSONEncoder().encode(resolutions), as: UTF8.self)
        try db.execute(
            sql: "INSERT INTO nimbus_conflicts (zone, name, resolved_at, resolutions) VALUES (?, ?, ?, ?)",
            arguments: [zone, name, now, text])
        return ConflictRecord(zoneName: zone, recordName: name, resolvedAt: now, resolutions: resolutions)
    }

    // MARK: - Whole-store changes

    /// Moves every local copy and pending change to the quarantine under `account`, and
    /// forgets the tokens and setup.
    func quarantineAll(account: String) throws {
        let now = nowMilliseconds
        let names = try Row.fetchAll(db, sql: "SELECT zone, name FROM nimbus_records UNION SELECT zone, name FROM nimbus_outbox")
        for row in names { changes.insert(zone: row["zone"], name: row["name"]) }
        try db.execute(
            sql: """
                INSERT INTO nimbus_quarantine (account, kind, zone, name, type, fields, quarantined_at, reason)
                SELECT ?, 'server', zone, name, type, fields, ?, 'accountChanged' FROM nimbus_records
                """,
            arguments: [account, now])
        try giveUpOutbox(account: account)
        try db.execute(sql: "DELETE FROM nimbus_activity")
        try db.execute(sql: "DELETE FROM nimbus_records")
        try db.execute(sql: "DELETE FROM nimbus_outbox")
        try db.execute(sql: "DELETE FROM nimbus_asset_uploads")
        try db.execute(sql: "DELETE FROM nimbus_zones")
        // The diagnostics' engine-wide records (throttling) are the device's, not the account's.
        try db.execute(
            sql: "DELETE FROM nimbus_state WHERE key != ? AND key NOT LIKE 'diagnostics.%'", arguments: [StateKey.account])
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
            baseChangeTag: row["base_tag"], revision: row["revision"], parent: row["parent"])
    }

    static func keysJSON(_ keys: Set<String>) -> String {
        JSON.array(keys.sorted().map { .string($0) }).serialized()
    }
}

extension Nimbus.Record {
    /// All fields as a dictionary.
    var fieldDictionary: [String: FieldValue] { values }
}
