import GRDB
import NimbusProtocol
import NimbusStore

extension SQLiteStore: NotificationStore {
    public func modifySubscriptions(_ operations: [SubscriptionOperation], owner: String, in database: DatabaseKey)
        async throws -> [SubscriptionResult]
    {
        let clock = self.clock
        return try await pool.write { db in
            let (dbID, _) = try Self.ensureDatabase(db, database)
            let now = clock.nowMillis()
            var seen = Set<String>()
            return try operations.map { operation -> SubscriptionResult in
                let id = operation.subscriptionID
                guard seen.insert(id).inserted else { return StorageAnswers.repeatedSubscription(id) }
                switch operation {
                case .save(let subscription):
                    if let failure = try StorageAnswers.missingZone(of: subscription, in: database, isLive: { name in
                        try Self.zone(db, database: dbID, name: name)?.deleted == false
                    }) {
                        return failure
                    }
                    try db.cachedStatement(
                        sql: """
                            INSERT OR REPLACE INTO subscriptions (db, owner, id, kind, zone, record_type, definition, created_at)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                            """
                    ).execute(arguments: [
                        dbID, owner, id, subscription.typeName, subscription.zoneName, subscription.recordType,
                        subscription.wireJSON(zoneOwner: nil).serialized(), now,
                    ])
                    return .saved(subscription)
                case .delete:
                    try db.cachedStatement(sql: "DELETE FROM subscriptions WHERE db = ? AND owner = ? AND id = ?")
                        .execute(arguments: [dbID, owner, id])
                    guard db.changesCount > 0 else { return StorageAnswers.unknownSubscription(id) }
                    return .deleted(subscriptionID: id)
                }
            }
        }
    }

    public func listSubscriptions(owner: String, in database: DatabaseKey) async throws -> [SubscriptionDefinition] {
        try await pool.read { db in
            guard let dbRow = try Self.databaseRow(db, database) else { return [] }
            return try Row.fetchAll(
                db, sql: "SELECT definition FROM subscriptions WHERE db = ? AND owner = ? ORDER BY id",
                arguments: [dbRow.id, owner]
            ).compactMap { SubscriptionDefinition(storedDefinition: $0[0]) }
        }
    }

    public func lookupSubscriptions(_ ids: [String], owner: String, in database: DatabaseKey) async throws
        -> [SubscriptionDefinition?]
    {
        try await pool.read { db in
            guard let dbRow = try Self.databaseRow(db, database) else { return ids.map { _ in nil } }
            return try ids.map { id in
                try String.fetchOne(
                    db.cachedStatement(sql: "SELECT definition FROM subscriptions WHERE db = ? AND owner = ? AND id = ?"),
                    arguments: [dbRow.id, owner, id]
                ).flatMap { SubscriptionDefinition(storedDefinition: $0) }
            }
        }
    }

    /// The subscriptions of a database that can fire for an event: for record changes those
    /// of the zone (or of every zone) and of the touched record types; for zone changes the
    /// zone and database subscriptions.
    static func candidateSubscriptions(_ db: Database, databaseID: Int64, event: CommitEvent) throws
        -> [StoredSubscription]
    {
        let rows: [Row]
        switch event {
        case .records(let zoneName, _):
            let types = Array(event.recordTypes)
            // Cached per number of record types (a write has one or a few): it runs in every write.
            rows = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT owner, definition, created_at FROM subscriptions
                        WHERE db = ? AND (zone IS NULL OR zone = ?)
                          AND (record_type IS NULL OR record_type IN (\(databaseQuestionMarks(count: types.count))))
                        """),
                arguments: StatementArguments([databaseID, zoneName] as [any DatabaseValueConvertible] + types))
        case .zones:
            rows = try Row.fetchAll(
                db.cachedStatement(
                    sql: "SELECT owner, definition, created_at FROM subscriptions WHERE db = ? AND kind != 'query'"),
                arguments: [databaseID])
        }
        return rows.compactMap { row in
            SubscriptionDefinition(storedDefinition: row[1]).map {
                StoredSubscription(subscription: $0, owner: row[0], createdAt: row[2])
            }
        }
    }
}
