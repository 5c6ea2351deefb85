import NimbusProtocol
import NimbusStore

/// A ``RecordStore`` held in memory: the storage core's third engine, with no SQL and no I/O.
///
/// ```swift
/// let store = MemoryRecordStore(layout: IndexLayout(recordTypes: [
///     "Article": .init(valueFields: ["title"], tokenFields: []),
/// ]))
/// let outcome = try await store.modifyRecords(
///     [RecordOperation(type: .create, record: article)], zone: "_defaultZone", atomic: true,
///     policy: WritePolicy(creatorOnlyWrites: false, now: 0), caller: caller, in: database)
/// ```
///
/// It runs the core's sequences (``ModifyTransaction``, ``ZoneChangeSet``, ``FeedPaging``,
/// ``FeedRules``) over dictionaries, so the core's rules can be tested in microseconds and
/// the seam an engine fills is shown whole in one file. What it leaves out, by design: asset
/// values (it has no asset store: a record naming an upload receipt or an asset fails as on
/// an engine that never received it), subscriptions (no notifications are created), and the
/// schema (the index layout is given at creation). Each call is one transaction: the actor
/// applies a plan only after every check passed, so nothing is ever half-written.
public actor MemoryRecordStore: RecordStore {
    /// One database's state: its version, zones, records (tombstones included) and usage.
    struct Database {
        var version: Int64 = 0
        /// Zone tokens older than this are expired (deleted zones compacted up to it).
        var zoneHorizon: Int64 = 0
        var zones: [String: ZoneState] = [ZoneID.defaultZoneName: .defaultZone]
        var deletedAt: [String: Int64] = [:]
        var records: [String: [String: StoredRecord]] = [:]
        var recordBytes: Int64 = 0
    }

    var databases: [DatabaseKey: Database] = [:]
    let layout: IndexLayout
    private let tokens: ChangeTokens
    private let clock: WallClock

    /// - Parameters:
    ///   - layout: the indexes of each record type, as a schema would declare them.
    ///   - secret: the secret sync tokens are signed with.
    ///   - clock: the time zone deletions are stamped with (compaction removes them after the
    ///     retention window).
    public init(
        layout: IndexLayout = IndexLayout(), secret: [UInt8] = Array(repeating: 7, count: 32), clock: WallClock = .system
    ) {
        self.layout = layout
        self.tokens = ChangeTokens(secret: secret)
        self.clock = clock
    }

    public nonisolated var changeTokens: ChangeTokens { tokens }

    // MARK: Records

    public func modify(_ request: ModifyTransaction) async throws -> ModifyOutcome {
        var transaction = request
        var state = databases[request.database] ?? Database()
        let zone = request.zone
        let rows = state.records[zone] ?? [:]
        var plan = try transaction.plan(
            zoneIsLive: state.zones[zone]?.deleted == false,
            rows: Dictionary(uniqueKeysWithValues: request.names.compactMap { name in rows[name].map { (name, $0) } }),
            baseVersion: state.version, assets: AssetContext(database: request.database))
        while let parents = plan.cascadingParents {
            plan = transaction.cascade(children: try Self.liveChildren(of: Set(parents), in: rows))
        }
        guard transaction.writes(plan) else { return transaction.unchanged(plan) }
        let delta = UsageDelta(recordBytes: UsageDelta.recordBytes(of: plan.changes))
        let usage = DatabaseUsage(recordBytes: state.recordBytes, assetBytes: 0)
        if let error = usage.exceeding(request.policy.quotaBytes, grownBy: delta) { throw error }
        for (_, after) in plan.changes { state.records[zone, default: [:]][after.recordName] = after }
        state.recordBytes += delta.recordBytes
        state.zones[zone]?.changeVersion = plan.lastVersion
        state.version = plan.lastVersion
        databases[request.database] = state
        return transaction.committed(plan, notifications: [])
    }

    /// The live records of a zone whose `DELETE_SELF` references name one of `parents`.
    private static func liveChildren(of parents: Set<String>, in rows: [String: StoredRecord]) throws -> [StoredRecord] {
        var children: [StoredRecord] = []
        for record in rows.values where !record.deleted {
            if !(try DeleteSelfReferences.targets(of: record)).isDisjoint(with: parents) { children.append(record) }
        }
        return children.sorted { $0.recordName < $1.recordName }
    }

    public func lookupRecords(_ names: [String], zone: String, in database: DatabaseKey) async throws -> [StoredRecord?] {
        let state = databases[database] ?? Database()
        guard state.zones[zone]?.deleted == false else { throw FeedRules.zoneNotFound(zone, in: database) }
        return names.map { name in state.records[zone]?[name].flatMap { $0.deleted ? nil : $0 } }
    }

    public func recordChanges(zone: String, since token: String?, limit: Int, in database: DatabaseKey) async throws
        -> RecordChangesPage
    {
        let position = try token.map { token throws(CloudKitError) in
            try tokens.decodeRecords(token, zone: zone, in: database)
        }
        guard let state = databases[database] else {
            try FeedRules.checkUnwrittenDatabase(zone: zone, position: position, in: database)
            return RecordChangesPage(
                records: [], syncToken: tokens.recordsOfUnwrittenDatabase(zone: zone, in: database),
                moreComing: false)
        }
        guard let zoneState = state.zones[zone], !zoneState.deleted else {
            throw FeedRules.zoneNotFound(zone, in: database)
        }
        if let position {
            try FeedRules.checkRecordToken(position, zone: zoneState, databaseVersion: state.version, in: database)
        }
        let since = position?.version ?? 0
        // Records created and deleted since the token are of no interest to the reader.
        let changed = (state.records[zone] ?? [:]).values
            .filter { $0.version > since && !($0.deleted && $0.createdVersion > since) }
            .sorted { $0.version < $1.version }
        let page = FeedPaging.cut(
            Array(changed.prefix(FeedPaging.readLimit(limit))), limit: limit, since: since, head: state.version,
            position: \.version)
        return RecordChangesPage(
            records: page.entries,
            syncToken: tokens.records(zone: zone, state: zoneState, version: page.tokenPosition, in: database),
            moreComing: page.moreComing)
    }

    public func countRecordChanges(zone: String, since token: String, in database: DatabaseKey) async throws -> Int {
        let since = try tokens.decodeRecords(token, zone: zone, in: database).version
        return (databases[database]?.records[zone] ?? [:]).values.count(where: { $0.version > since })
    }

    // MARK: Zones

    public func listZones(in database: DatabaseKey) async throws -> [ZoneState] {
        let zones = (databases[database] ?? Database()).zones.values.filter { !$0.deleted }
        // The default zone first, then by name.
        return zones.sorted { lhs, rhs in
            let (lhsDefault, rhsDefault) = (lhs.zoneName == ZoneID.defaultZoneName, rhs.zoneName == ZoneID.defaultZoneName)
            return lhsDefault != rhsDefault ? lhsDefault : lhs.zoneName < rhs.zoneName
        }
    }

    public func lookupZones(_ names: [String], in database: DatabaseKey) async throws -> [ZoneState?] {
        let zones = (databases[database] ?? Database()).zones
        return names.map { name in zones[name].flatMap { $0.deleted ? nil : $0 } }
    }

    public func modifyZones(_ operations: [ZoneOperation], caller: Caller?, in database: DatabaseKey) async throws
        -> ZoneModifyOutcome
    {
        var state = databases[database] ?? Database()
        var change = ZoneChangeSet(zones: state.zones, version: state.version, now: clock.nowMillis())
        let results = operations.map { change.apply($0) }
        guard !change.touched.isEmpty else { return ZoneModifyOutcome(results: results) }
        for name in change.emptied {
            let freed = (state.records[name] ?? [:]).values.filter { !$0.deleted }
            state.recordBytes -= UsageDelta.recordBytes(of: freed.map { (before: nil, after: $0) })
            state.records[name] = nil
        }
        for name in change.touched {
            state.zones[name] = change.zones[name]
            state.deletedAt[name] = change.deletedAt[name] ?? nil
        }
        state.version = change.version
        databases[database] = state
        return ZoneModifyOutcome(results: results)
    }

    public func zoneChanges(_ feed: ZoneFeed, since: Int64, limit: Int, in database: DatabaseKey) async throws
        -> ZoneChangesPage
    {
        guard let state = databases[database] else {
            if since > 0 { throw FeedRules.tokenAhead() }
            return ZoneChangesPage(zones: [], syncToken: feed.token(since, tokens: tokens, in: database), moreComing: false)
        }
        try FeedRules.checkZoneToken(since: since, head: state.version, horizon: state.zoneHorizon)
        let zones = state.zones.values
            .filter { feed.version(of: $0) > since && !($0.deleted && since == 0) }
            .sorted { feed.version(of: $0) < feed.version(of: $1) }
        let page = FeedPaging.cut(
            Array(zones.prefix(FeedPaging.readLimit(limit))), limit: limit, since: since, head: state.version,
            position: feed.version(of:))
        return ZoneChangesPage(
            zones: page.entries, syncToken: feed.token(page.tokenPosition, tokens: tokens, in: database),
            moreComing: page.moreComing)
    }

    // MARK: Compaction

    public func compact(retentionMillis: Int64, now: Int64) async throws -> CompactionReport {
        let cutoff = now - retentionMillis
        var tombstones = 0
        var zonesRemoved = 0
        for (key, var state) in databases {
            for (zone, rows) in state.records {
                let expired = rows.values.filter { $0.deleted && $0.modified.timestamp <= cutoff }
                guard let newest = expired.map(\.version).max() else { continue }
                if var compacted = state.zones[zone] {
                    compacted.horizon = max(compacted.horizon, newest)
                    state.zones[zone] = compacted
                }
                for record in expired { state.records[zone]?[record.recordName] = nil }
                tombstones += expired.count
            }
            for (zone, deletedAt) in state.deletedAt where deletedAt <= cutoff {
                guard let removed = state.zones[zone], removed.deleted else { continue }
                state.zoneHorizon = max(state.zoneHorizon, removed.metaVersion)
                state.zones[zone] = nil
                state.deletedAt[zone] = nil
                zonesRemoved += 1
            }
            databases[key] = state
        }
        return CompactionReport(tombstonesRemoved: tombstones, zonesRemoved: zonesRemoved)
    }
}

extension MemoryRecordStore {
    /// The indexes the layout declares for a record type; `nil`: none (no entries).
    func layoutOf(_ recordType: String) -> IndexLayout.RecordType? { layout.recordTypes[recordType] }

    /// The live records of a type, in one zone or all, with their zones.
    func liveRecords(of recordType: String, zone: String?, in database: DatabaseKey) -> [(zone: String, record: StoredRecord)] {
        guard let state = databases[database] else { return [] }
        var found: [(zone: String, record: StoredRecord)] = []
        for (name, rows) in state.records where zone == nil || zone == name {
            guard state.zones[name]?.deleted == false else { continue }
            for record in rows.values where !record.deleted && record.recordType == recordType {
                found.append((name, record))
            }
        }
        return found
    }
}
