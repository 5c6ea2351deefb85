import Foundation
import GRDB
import Nimbus
import NimbusProtocol

/// The outbox, inside a write transaction of the ``LocalStore``.
///
/// Entries coalesce per record: saving then deleting a record before it is sent leaves only
/// the delete; deleting then saving leaves only the save.
public struct Outbox {
    let db: GRDB.Database
    /// The records this transaction changed, for ``LocalStore/changes()``.
    let changes: ChangeTracker
    let now: @Sendable () -> Date

    /// Queues a save of the record's current fields. Changed keys are computed against the
    /// server copy, so a later send can do a field-level merge.
    ///
    /// - Throws: ``NimbusError/Code/permissionFailure`` for a record of a shared zone that
    ///   the user may only read (every share of the zone this device holds is read-only).
    public func save(_ record: LocalRecord) throws {
        try refuseReadOnly(zone: record.zoneName)
        let base = try Row.fetchOne(
            db, sql: "SELECT fields FROM nimbus_records WHERE zone = ? AND name = ?",
            arguments: [record.zoneName, record.recordName])
        let baseFields = try base.map { try [String: FieldValue](jsonText: $0["fields"]) } ?? [:]
        let changed = Set(record.fields.keys).union(baseFields.keys).filter { key in
            record.fields[key].map { !$0.sameData(as: baseFields[key]) } ?? (baseFields[key] != nil)
        }
        try upsert(
            zone: record.zoneName, name: record.recordName, kind: .save, type: record.recordType,
            fields: record.fields, changedKeys: changed, parent: record.parent)
    }

    /// Queues a deletion.
    ///
    /// - Throws: ``NimbusError/Code/permissionFailure`` in a shared zone the user may only read.
    public func delete(zone: String, recordName: String) throws {
        try refuseReadOnly(zone: zone)
        let baseTag = try String.fetchOne(
            db, sql: "SELECT tag FROM nimbus_records WHERE zone = ? AND name = ?", arguments: [zone, recordName])
        let type =
            try String.fetchOne(
                db, sql: "SELECT type FROM nimbus_outbox WHERE zone = ? AND name = ?", arguments: [zone, recordName])
            ?? String.fetchOne(
                db, sql: "SELECT type FROM nimbus_records WHERE zone = ? AND name = ?", arguments: [zone, recordName])
            ?? ""
        try upsert(zone: zone, name: recordName, kind: .delete, type: type, fields: [:], changedKeys: [], baseTag: baseTag)
    }

    func upsert(
        zone: String, name: String, kind: PendingChange.Kind, type: String, fields: [String: FieldValue],
        changedKeys: Set<String>, baseTag: String? = nil, parent: String? = nil
    ) throws {
        changes.insert(zone: zone, name: name)
        let keysJSON = Self.keysJSON(changedKeys)
        try db.execute(
            sql: """
                INSERT INTO nimbus_outbox (zone, name, kind, type, fields, changed_keys, base_tag, revision, enqueued_at, parent)
                VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?)
                ON CONFLICT(zone, name) DO UPDATE SET
                    kind = excluded.kind, type = excluded.type, fields = excluded.fields,
                    changed_keys = excluded.changed_keys, base_tag = excluded.base_tag, revision = revision + 1,
                    parent = excluded.parent
                """,
            arguments: [
                zone, name, kind.rawValue, type, fields.jsonText, keysJSON, baseTag,
                Int64(now().timeIntervalSince1970 * 1000), parent,
            ])
    }

    /// The pending changes, oldest first.
    public func pending(limit: Int = .max) throws -> [PendingChange] {
        try Self.pending(db, limit: limit)
    }

    static func pending(_ db: GRDB.Database, limit: Int) throws -> [PendingChange] {
        try Row.fetchAll(
            db, sql: "SELECT * FROM nimbus_outbox ORDER BY enqueued_at, zone, name LIMIT ?", arguments: [limit]
        ).map(pendingChange)
    }
}
