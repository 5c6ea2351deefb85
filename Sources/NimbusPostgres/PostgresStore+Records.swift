import NimbusProtocol
import NimbusStore
import PostgresNIO

extension PostgresStore: RecordStore {
    /// Runs `transaction` in one PostgreSQL transaction: lock the database and allocate its
    /// version, read the rows, plan, write in batches (records, then their index entries,
    /// then asset references), add the change to the database's usage counter and hold it to
    /// the policy's quota (``DatabaseUsage/exceeding(_:grownBy:)``), create notifications.
    ///
    /// The rows are read only after the database's row lock is taken (see
    /// ``lockDatabase(_:_:bump:)``), so a locked save's `recordChangeTag` check sees the
    /// latest commit of every node. A request that ends up writing nothing rolls back and
    /// gives the version back.
    public func modify(_ request: ModifyTransaction) async throws -> ModifyOutcome {
        var request = request
        let database = request.database
        let zone = request.zone
        return try await transaction { transaction in
            let (dbID, firstVersion) = try await lockDatabase(transaction, database, bump: true)
            let read = try await zoneAndRecords(transaction, database: dbID, zone: zone, names: request.names)
            var plan = try request.plan(
                zoneIsLive: read.zoneDeleted == false, rows: read.records, baseVersion: firstVersion - 1,
                assets: try await assetContext(
                    transaction, database: database, databaseID: dbID, receipts: request.receipts,
                    namedHashes: request.namedHashes))
            while let parents = plan.cascadingParents {
                plan = request.cascade(
                    children: try await deleteSelfChildren(transaction, database: dbID, zone: zone, of: parents))
            }
            guard request.writes(plan) else {
                transaction.rollbackOnly = true
                return request.unchanged(plan)
            }
            let event = request.commitEvent(of: plan)
            var delta = UsageDelta(recordBytes: UsageDelta.recordBytes(of: plan.changes))
            let written = try await write(
                transaction, database: dbID, zone: zone, changes: plan.changes, version: plan.lastVersion,
                recordTypes: event.recordTypes, usage: (expectedVersion: firstVersion - 1, recordBytes: delta.recordBytes))
            try await updateIndexEntries(transaction, key: database, database: dbID, zone: zone, changes: plan.changes)
            var usage = written.usage
            if let assets = try await writeAssetChanges(transaction, database: dbID, zone: zone, plan: plan) {
                delta.assetBytes = assets.assetBytes
                usage = assets.usage
            }
            if let error = usage.exceeding(request.policy.quotaBytes, grownBy: delta) {
                throw error  // rolls the transaction back: nothing is written
            }
            let notifications = try await createNotifications(
                transaction, database: database, databaseID: dbID, event: event, subscriptions: written.subscriptions,
                caller: request.caller, now: request.policy.now)
            return request.committed(plan, notifications: notifications)
        }
    }

    public func lookupRecords(_ names: [String], zone: String, in database: DatabaseKey) async throws
        -> [StoredRecord?]
    {
        let rows = try await rows(
            """
            SELECT z.deleted, \(unescaped: Self.recordColumnsR)
            FROM databases d
            LEFT JOIN zones z ON z.db = d.id AND z.name = \(zone)
            LEFT JOIN LATERAL (
                SELECT found.* FROM unnest(\(names)::text[]) AS wanted(name), LATERAL (
                    SELECT * FROM records WHERE db = d.id AND zone = \(zone) AND name = wanted.name OFFSET 0) AS found
            ) r ON NOT r.deleted
            WHERE \(database: database)
            """)
        guard !rows.isEmpty else {
            if zone == ZoneID.defaultZoneName { return names.map { _ in nil } }
            throw FeedRules.zoneNotFound(zone, in: database)
        }
        var found: [String: StoredRecord] = [:]
        for row in rows {
            var columns = ColumnReader(row)
            guard try columns.next(Bool?.self) == false else { throw FeedRules.zoneNotFound(zone, in: database) }
            if let record = try columns.optionalRecord() { found[record.recordName] = record }
        }
        return names.map { found[$0] }
    }

    /// One statement, so one snapshot: the records and the database version the token is
    /// made of are consistent, and every version up to that one is visible in it.
    public func recordChanges(zone: String, since token: String?, limit: Int, in database: DatabaseKey) async throws
        -> RecordChangesPage
    {
        let tokens = try changeTokens
        let position = try token.map { token throws(CloudKitError) in
            try tokens.decodeRecords(token, zone: zone, in: database)
        }
        let since = position?.version ?? 0
        let rows = try await rows(
            Prepared<Statements.RecordFeed>(database.parameters + [zone, since, Int64(FeedPaging.readLimit(limit))]))
        guard !rows.isEmpty else { return try Self.emptyFeed(zone, position, tokens: tokens, in: database) }
        // The database and zone columns repeat on every row: read them once.
        var first = ColumnReader(rows[0])
        first.skip(12)
        let databaseVersion: Int64 = try first.next()
        let zoneState = try Self.checkFeedZone(
            try first.optionalZone(), zone, position, databaseVersion: databaseVersion, in: database)
        var records: [StoredRecord] = []
        records.reserveCapacity(rows.count)
        for row in rows {
            if let record = try row.leadingRecord() { records.append(record) }
        }
        let page = FeedPaging.cut(records, limit: limit, since: since, head: databaseVersion, position: \.version)
        return RecordChangesPage(
            records: page.entries,
            syncToken: tokens.records(zone: zone, state: zoneState, version: page.tokenPosition, in: database),
            moreComing: page.moreComing)
    }

    public func countRecordChanges(zone: String, since token: String, in database: DatabaseKey) async throws -> Int {
        let since = try changeTokens.decodeRecords(token, zone: zone, in: database).version
        let rows = try await rows(
            """
            SELECT count(*) FROM records
            WHERE db = (SELECT d.id FROM databases d WHERE \(database: database)) AND zone = \(zone) AND version > \(since)
            """)
        return Int(try rows.first?.decode(Int64.self) ?? 0)
    }

    /// The feed from the records' written forms (schema version 6): each row brings its
    /// record as one text (`wire_head || fields || wire_tail`, joined by PostgreSQL) whose
    /// bytes are appended to the page as they are — PostgreSQL guarantees a `text` value of a
    /// UTF-8 database is valid UTF-8, so nothing is validated or decoded. A page holding a
    /// row without the written form of its version (written before version 6, or by a node
    /// of an older release), or whose fields contain the bytes `null` (possibly a value that
    /// does not decode: ``StoredRecord/servableFieldsJSON``), is read again through
    /// ``recordChanges(zone:since:limit:in:)``.
    public func writtenRecordChanges(
        zone: String, since token: String?, limit: Int, zoneClosing: String, in database: DatabaseKey
    ) async throws -> WrittenRecordChangesPage {
        let tokens = try changeTokens
        let position = try token.map { token throws(CloudKitError) in
            try tokens.decodeRecords(token, zone: zone, in: database)
        }
        let since = position?.version ?? 0
        let rows = try await rows(
            Prepared<Statements.WrittenRecordFeed>(database.parameters + [zone, since, Int64(FeedPaging.readLimit(limit))]))
        guard !rows.isEmpty else {
            let empty = try Self.emptyFeed(zone, position, tokens: tokens, in: database)
            return WrittenRecordChangesPage(recordsJSON: Array("[]".utf8), syncToken: empty.syncToken, moreComing: false, recordCount: 0)
        }
        var first = ColumnReader(rows[0])
        first.skip(2)
        let databaseVersion: Int64 = try first.next()
        let zoneState = try Self.checkFeedZone(
            try first.optionalZone(), zone, position, databaseVersion: databaseVersion, in: database)
        var entries: [(version: Int64, written: ByteBuffer?)] = []
        entries.reserveCapacity(rows.count)
        var inOrder = true
        for row in rows {
            var columns = ColumnReader(row)
            guard let version = try columns.next(Int64?.self) else { continue }  // an empty page's one row
            if let previous = entries.last, previous.version >= version { inOrder = false }
            entries.append((version, columns.nextBytes()))
        }
        if !inOrder { entries.sort { $0.version < $1.version } }
        let cut = FeedPaging.cut(entries, limit: limit, since: since, head: databaseVersion, position: \.version)
        let written = cut.entries.compactMap(\.written)
        guard written.count == cut.entries.count else {
            let page = try await recordChanges(zone: zone, since: token, limit: limit, in: database)
            return WrittenRecordChangesPage(
                recordsJSON: StoredRecord.writtenBytes(page.records, closedBy: zoneClosing),
                syncToken: page.syncToken, moreComing: page.moreComing, recordCount: page.records.count)
        }
        let closing = Array(zoneClosing.utf8)
        var text: [UInt8] = []
        text.reserveCapacity(written.reduce(2) { $0 + $1.readableBytes + closing.count + 1 })
        text.append(UInt8(ascii: "["))
        for (offset, record) in written.enumerated() {
            if offset > 0 { text.append(UInt8(ascii: ",")) }
            text.append(contentsOf: record.readableBytesView)
            text.append(contentsOf: closing)
        }
        text.append(UInt8(ascii: "]"))
        return WrittenRecordChangesPage(
            recordsJSON: text,
            syncToken: tokens.records(zone: zone, state: zoneState, version: cut.tokenPosition, in: database),
            moreComing: cut.moreComing, recordCount: written.count)
    }

    /// A feed statement found no database row: the default zone of a database never written
    /// has an empty feed, any other zone does not exist.
    private static func emptyFeed(
        _ zone: String, _ position: RecordFeedPosition?, tokens: ChangeTokens, in database: DatabaseKey
    ) throws(CloudKitError) -> RecordChangesPage {
        try FeedRules.checkUnwrittenDatabase(zone: zone, position: position, in: database)
        return RecordChangesPage(
            records: [], syncToken: tokens.recordsOfUnwrittenDatabase(zone: zone, in: database),
            moreComing: false)
    }

    /// The feed's zone, checked: it exists, is not deleted, and the token belongs to it.
    private static func checkFeedZone(
        _ zone: ZoneState?, _ name: String, _ position: RecordFeedPosition?, databaseVersion: Int64,
        in database: DatabaseKey
    ) throws(CloudKitError) -> ZoneState {
        guard let zone, !zone.deleted else { throw FeedRules.zoneNotFound(name, in: database) }
        if let position {
            try FeedRules.checkRecordToken(position, zone: zone, databaseVersion: databaseVersion, in: database)
        }
        return zone
    }
}

extension PostgresStore {
    /// Whether the zone is deleted (`nil` if it does not exist) and the rows (live or
    /// tombstone) of the given names, in one statement.
    func zoneAndRecords(_ transaction: Transaction, database: Int64, zone: String, names: [String]) async throws
        -> (zoneDeleted: Bool?, records: [String: StoredRecord])
    {
        let rows = try await transaction.rows(Prepared<Statements.ZoneAndRecords>([database, zone, names]))
        var zoneDeleted: Bool?
        var records: [String: StoredRecord] = [:]
        for row in rows {
            var columns = ColumnReader(row)
            zoneDeleted = try columns.next(Bool.self)
            if let record = try columns.optionalRecord() { records[record.recordName] = record }
        }
        return (zoneDeleted, records)
    }

    /// The live records that reference any of `parents` with `DELETE_SELF` (one index probe
    /// per name, as in ``Statements/ZoneAndRecords``).
    func deleteSelfChildren(_ transaction: Transaction, database: Int64, zone: String, of parents: [String])
        async throws -> [StoredRecord]
    {
        try await transaction.rows(
            """
            SELECT \(unescaped: Self.recordColumnsR)
            FROM unnest(\(parents)::text[]) AS parent(name),
            LATERAL (
                SELECT source FROM record_refs WHERE db = \(database) AND zone = \(zone) AND target = parent.name OFFSET 0
            ) AS f,
            LATERAL (
                SELECT * FROM records WHERE db = \(database) AND zone = \(zone) AND name = f.source OFFSET 0
            ) AS r
            WHERE NOT r.deleted
            ORDER BY parent.name, f.source
            """
        ).map { row in
            var columns = ColumnReader(row)
            return try columns.record()
        }
    }

    /// Writes the planned rows (the last state of each name), advances the zone's and the
    /// database's version to `version`, adds `usage.recordBytes` to the usage counter
    /// (expected at `usage.expectedVersion`, the version before this transaction's) and reads
    /// the subscriptions the commit may fire and the counter, in one statement; keeps
    /// `record_refs`, the `DELETE_SELF` index, in step before that.
    func write(
        _ transaction: Transaction, database: Int64, zone: String,
        changes: [(before: StoredRecord?, after: StoredRecord)], version: Int64, recordTypes: Set<String>,
        usage: (expectedVersion: Int64, recordBytes: Int64)
    ) async throws -> (subscriptions: [StoredSubscription], usage: DatabaseUsage) {
        var last: [String: Int] = [:]
        for (index, change) in changes.enumerated() { last[change.after.recordName] = index }
        let rows = changes.indices.filter { last[changes[$0].after.recordName] == $0 }.map { changes[$0].after }
        try await updateReferences(transaction, database: database, zone: zone, changes: changes, finalRows: rows)
        let written = try await transaction.rows(
            Prepared<Statements.WriteRecords>([
                database, zone, rows.map(\.recordName), rows.map(\.recordType), rows.map(\.fieldsJSON),
                rows.map(\.created.timestamp), NullableArray(rows.map(\.created.userRecordName)),
                NullableArray(rows.map(\.created.deviceID)), rows.map(\.modified.timestamp),
                NullableArray(rows.map(\.modified.userRecordName)), NullableArray(rows.map(\.modified.deviceID)),
                rows.map(\.version), rows.map(\.createdVersion), rows.map(\.deleted), version, Array(recordTypes),
                rows.map(\.wireHead), rows.map(\.wireTail), usage.expectedVersion, usage.recordBytes,
            ]))
        guard let first = written.first else {
            throw PostgresStoreError(.corruptRow, "the row of database \(database) vanished during a modify")
        }
        var counter = ColumnReader(first)
        let usage = DatabaseUsage(recordBytes: try counter.next(), assetBytes: try counter.next())
        var subscriptions: [StoredSubscription] = []
        for row in written {
            var columns = ColumnReader(row)
            columns.skip(2)
            guard let owner = try columns.next(String?.self) else { continue }  // the one row of no subscription
            let definition: String = try columns.next()
            let createdAt: Int64 = try columns.next()
            if let subscription = SubscriptionDefinition(storedDefinition: definition) {
                subscriptions.append(StoredSubscription(subscription: subscription, owner: owner, createdAt: createdAt))
            }
        }
        return (subscriptions, usage)
    }

    /// Replaces the `record_refs` rows of every written record whose JSON (before or after)
    /// mentions DELETE_SELF with those of its final state. Only such rows touch the index,
    /// so the common write pays nothing.
    private func updateReferences(
        _ transaction: Transaction, database: Int64, zone: String,
        changes: [(before: StoredRecord?, after: StoredRecord)], finalRows: [StoredRecord]
    ) async throws {
        var cleared: Set<String> = []
        for change in changes {
            if let before = change.before, DeleteSelfReferences.mentioned(in: before.fieldsJSON) {
                cleared.insert(before.recordName)
            }
            if DeleteSelfReferences.mentioned(in: change.after.fieldsJSON) { cleared.insert(change.after.recordName) }
        }
        guard !cleared.isEmpty else { return }
        var targets: [String] = []
        var sources: [String] = []
        for row in finalRows where cleared.contains(row.recordName) {
            for target in try DeleteSelfReferences.targets(of: row) {
                targets.append(target)
                sources.append(row.recordName)
            }
        }
        try await transaction.rows(
            """
            DELETE FROM record_refs WHERE db = \(database) AND zone = \(zone) AND source = ANY(\(Array(cleared)))
            """)
        guard !targets.isEmpty else { return }
        try await transaction.rows(
            """
            INSERT INTO record_refs (db, zone, target, source)
            SELECT \(database), \(zone), t.target, t.source FROM unnest(\(targets)::text[], \(sources)::text[]) AS t(target, source)
            ON CONFLICT DO NOTHING
            """)
    }
}
