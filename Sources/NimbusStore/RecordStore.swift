import NimbusProtocol

/// The storage seam of Nimbus: databases, zones, records and their change log.
///
/// An engine (embedded SQLite, PostgreSQL) implements the primitive reads and writes; the
/// CloudKit semantics of a modify request (locked saves, EXISTS, update versus replace,
/// atomic batches, reference validation) live once, in ``ModifyPlanner``, so that every
/// engine behaves the same.
///
/// Change tracking follows the FoundationDB Record Layer: each database has a version that
/// every commit advances inside its transaction; every record row and tombstone carries the
/// version of its last change; a sync token is a version made opaque. Readers therefore
/// never skip a change, and a feed coalesces edits for free.
///
/// Queries read *index entries* (``IndexLayout``, ``IndexEntries``): the engine keeps, for
/// each record type of a container environment, the entries of the indexes its schema
/// (``SchemaStore``) declares, and changes them in the same transaction as the records they
/// describe: every write of records (``modifyRecords(_:zone:atomic:policy:caller:in:)``,
/// zone deletion in ``modifyZones(_:caller:in:)``) and every schema change that adds or
/// removes an index (``SchemaStore/updateSchema(_:container:environment:expectedVersion:)``).
/// Reading the layout inside the write transaction is what keeps entries complete while a
/// schema changes under concurrent writes.
///
/// Methods throw ``CloudKitError`` for protocol errors (ZONE_NOT_FOUND,
/// CHANGE_TOKEN_EXPIRED, …); any other error is an engine failure.
public protocol RecordStore: Sendable {
    /// The sync tokens of this store, signed with the server secret it keeps (created once,
    /// shared by every node of the store). Throws only when the store is not open.
    var changeTokens: ChangeTokens { get throws }

    /// Runs one transaction of a `records/modify`: reads, plans and writes as `transaction`
    /// says (``ModifyTransaction`` holds the sequence and every rule; the engine performs it).
    ///
    /// When the transaction is atomic, any failed operation fails the whole request: nothing
    /// is written and every other operation reports ATOMIC_ERROR. Otherwise the operations
    /// that can be applied are. The index entries of every changed record are replaced, in
    /// the same transaction, by ``IndexEntries/entries(of:layout:)`` for the layout of the
    /// container environment's current schema (a deleted record has none).
    ///
    /// Callers use ``modifyRecords(_:zone:atomic:policy:caller:in:)``, which splits a large
    /// batch into transactions.
    func modify(_ transaction: ModifyTransaction) async throws -> ModifyOutcome

    /// Live records by name, in the order asked; `nil` for a missing or deleted record.
    func lookupRecords(_ names: [String], zone: String, in database: DatabaseKey) async throws -> [StoredRecord?]

    /// The records changed in a zone since `token` (from the start when `nil`).
    func recordChanges(zone: String, since token: String?, limit: Int, in database: DatabaseKey) async throws
        -> RecordChangesPage

    /// How many changes a zone's feed holds after `token` (one ``recordChanges(zone:since:limit:in:)``
    /// just issued), for a reader's estimate of the rest: each record changed since counts
    /// once, and tombstones count too (the feed leaves out those of records created after the
    /// token), so the number is at most that many above what the feed will return. Counted
    /// from the `(db, zone, version)` index alone; 0 for a zone or database that does not
    /// exist.
    func countRecordChanges(zone: String, since token: String, in database: DatabaseKey) async throws -> Int

    /// ``recordChanges(zone:since:limit:in:)`` with its records written as the JSON array
    /// of their response dictionaries, each closed by `zoneClosing` (`,"zoneID":{…}}`, the
    /// zone as the caller names it): the server's change feeds when no `desiredKeys` or
    /// `numbersAsStrings` changes the records' form. Same records, tokens and errors.
    ///
    /// The default writes the records ``recordChanges(zone:since:limit:in:)`` reads. An
    /// engine that keeps each record's written parts (``StoredRecord/wireHead``,
    /// ``StoredRecord/wireTail``) can join them without decoding a record.
    func writtenRecordChanges(
        zone: String, since token: String?, limit: Int, zoneClosing: String, in database: DatabaseKey
    ) async throws -> WrittenRecordChangesPage

    /// Live records of one record type from one index, with their index positions, in the
    /// scan's order (see ``IndexScan``): at most `scan.limit` hits strictly after
    /// `scan.after`. Only entries of live records of `scan.recordType` in `database` (and in
    /// `scan.zone`, when given) are returned. An index the schema does not declare has no
    /// entries. The engine does no filtering beyond the scan's range or tokens.
    func scanIndex(_ scan: IndexScan, in database: DatabaseKey) async throws -> [IndexHit]

    /// The live zones of a database, the default zone first.
    func listZones(in database: DatabaseKey) async throws -> [ZoneState]

    /// Zones by name, in the order asked; `nil` for a missing zone.
    func lookupZones(_ names: [String], in database: DatabaseKey) async throws -> [ZoneState?]

    /// Creates and deletes zones in one transaction. Deleting a zone deletes its records (and
    /// their index entries).
    /// The zone and database subscriptions that fire create their notifications in the same
    /// transaction; `caller` names who made the change, so their device is not notified.
    func modifyZones(_ operations: [ZoneOperation], caller: Caller?, in database: DatabaseKey) async throws
        -> ZoneModifyOutcome

    /// A page of one of a database's zone feeds (``ZoneFeed``): the zones whose feed version
    /// is after `since`, in version order, cut by ``FeedPaging`` and checked by
    /// ``FeedRules/checkZoneToken(since:head:horizon:)``. With no token (`since` 0) deleted
    /// zones are left out; a zone created and deleted since the token is reported as deleted:
    /// unlike records, zones are often created by the very client that reads the feed (in its
    /// own recovery), which must learn that its zone is gone again.
    ///
    /// Callers use ``zoneMetaChanges(since:limit:in:)`` and ``databaseChanges(since:limit:in:)``.
    func zoneChanges(_ feed: ZoneFeed, since: Int64, limit: Int, in database: DatabaseKey) async throws
        -> ZoneChangesPage

    /// Removes tombstones and deleted zones older than `retentionMillis` and raises the
    /// horizon below which tokens are expired.
    func compact(retentionMillis: Int64, now: Int64) async throws -> CompactionReport
}

extension RecordStore {
    /// Zones created or deleted since `token` (`zones/changes`).
    public func zoneMetaChanges(since token: String?, limit: Int, in database: DatabaseKey) async throws
        -> ZoneChangesPage
    {
        try await zoneChanges(
            .meta, since: try ZoneFeed.meta.version(of: token, tokens: changeTokens, in: database), limit: limit,
            in: database)
    }

    /// Zones whose records or existence changed since `token` (`changes/database`).
    public func databaseChanges(since token: String?, limit: Int, in database: DatabaseKey) async throws
        -> ZoneChangesPage
    {
        try await zoneChanges(
            .database, since: try ZoneFeed.database.version(of: token, tokens: changeTokens, in: database),
            limit: limit, in: database)
    }

    /// Applies a `records/modify` request to one zone: one transaction (``modify(_:)``), or
    /// for a large non-atomic batch of saves, several in order (``ModifyParts``, under
    /// ``WritePolicy/transactionRecordLimit``).
    public func modifyRecords(
        _ operations: [RecordOperation], zone: String, atomic: Bool, policy: WritePolicy, caller: Caller,
        in database: DatabaseKey
    ) async throws -> ModifyOutcome {
        try await ModifyParts.commit(operations, atomic: atomic, limit: policy.transactionRecordLimit) { part in
            try await modify(
                ModifyTransaction(part, zone: zone, atomic: atomic, policy: policy, caller: caller, in: database))
        }
    }

    /// Creates and deletes zones on behalf of no one in particular (every device is notified).
    public func modifyZones(_ operations: [ZoneOperation], in database: DatabaseKey) async throws -> [ZoneResult] {
        try await modifyZones(operations, caller: nil, in: database).results
    }
}

/// Rules the HTTP layer decides and the store enforces inside the transaction.
public struct WritePolicy: Sendable, Hashable {
    /// Only a record's creator (or an admin) may change or delete it. Ignored when
    /// ``publicAccess`` is set.
    public var creatorOnlyWrites: Bool
    /// The public database's per-record-type permissions, from the schema: who may create
    /// records of a type, and change or delete them (the record's type decides).
    public var publicAccess: PublicAccess?
    /// The current time in milliseconds since the epoch.
    public var now: Int64
    /// The most bytes the database may hold (its live records' fields plus the assets they
    /// reference, ``DatabaseUsage``); `nil`: no limit. A request that would leave the database
    /// above it, and larger than before, fails whole with QUOTA_EXCEEDED.
    public var quotaBytes: Int64?
    /// The most records one transaction of a non-atomic batch of saves writes; a larger batch
    /// commits in parts, in order (``ModifyParts``): on SQLite other users' writes wait for one
    /// part; on PostgreSQL, whose writers do not queue behind one another, the batch's work
    /// comes in shorter bursts. `nil`: whole batches. The server sets
    /// it for a flood's requests in the background lane (docs/THROTTLING.md).
    public var transactionRecordLimit: Int?

    public init(creatorOnlyWrites: Bool, now: Int64) {
        self.creatorOnlyWrites = creatorOnlyWrites
        self.now = now
    }

    /// The policy of the public database: its schema's grants decide.
    public init(publicAccess: PublicAccess, now: Int64) {
        self.creatorOnlyWrites = true
        self.publicAccess = publicAccess
        self.now = now
    }
}

extension RecordStore {
    public func writtenRecordChanges(
        zone: String, since token: String?, limit: Int, zoneClosing: String, in database: DatabaseKey
    ) async throws -> WrittenRecordChangesPage {
        let page = try await recordChanges(zone: zone, since: token, limit: limit, in: database)
        return WrittenRecordChangesPage(
            recordsJSON: StoredRecord.writtenBytes(page.records, closedBy: zoneClosing), syncToken: page.syncToken,
            moreComing: page.moreComing, recordCount: page.records.count)
    }
}
