import NimbusProtocol
import NimbusStore
import PostgresNIO

extension PostgresStore: NotificationStore {
    /// Saves and deletes in one statement, under the database's row lock (so a subscription
    /// and a concurrent commit of that database are ordered one way or the other).
    public func modifySubscriptions(_ operations: [SubscriptionOperation], owner: String, in database: DatabaseKey)
        async throws -> [SubscriptionResult]
    {
        try await transaction { transaction in
            let (dbID, _) = try await lockDatabase(transaction, database, bump: false)
            let zoneNames = operations.compactMap { operation -> String? in
                guard case .save(let subscription) = operation, let zone = subscription.zoneName,
                    zone != ZoneID.defaultZoneName
                else { return nil }
                return zone
            }
            var liveZones: Set<String> = []
            if !zoneNames.isEmpty {
                for row in try await transaction.rows(
                    "SELECT name FROM zones WHERE db = \(dbID) AND name = ANY(\(zoneNames)) AND NOT deleted")
                {
                    liveZones.insert(try row.decode(String.self))
                }
            }
            var seen = Set<String>()
            var results: [SubscriptionResult?] = []
            var saves: [SubscriptionDefinition] = []
            var deletes: [String] = []
            for operation in operations {
                let id = operation.subscriptionID
                guard seen.insert(id).inserted else {
                    results.append(StorageAnswers.repeatedSubscription(id))
                    continue
                }
                switch operation {
                case .save(let subscription):
                    if let failure = StorageAnswers.missingZone(of: subscription, in: database, isLive: liveZones.contains) {
                        results.append(failure)
                        continue
                    }
                    saves.append(subscription)
                    results.append(.saved(subscription))
                case .delete:
                    deletes.append(id)
                    results.append(nil)
                }
            }
            let removed = Set(
                try await transaction.rows(
                    """
                    WITH saved AS (
                        INSERT INTO subscriptions (db, owner, id, kind, zone, record_type, definition, created_at)
                        SELECT \(dbID), \(owner), t.*, \(self.clock.nowMillis()) FROM unnest(
                            \(saves.map(\.subscriptionID))::text[], \(saves.map(\.typeName))::text[],
                            \(NullableArray(saves.map(\.zoneName)))::text[], \(NullableArray(saves.map(\.recordType)))::text[],
                            \(saves.map { $0.wireJSON(zoneOwner: nil).serialized() })::text[]) AS t
                        ON CONFLICT (db, owner, id) DO UPDATE SET
                            kind = EXCLUDED.kind, zone = EXCLUDED.zone, record_type = EXCLUDED.record_type,
                            definition = EXCLUDED.definition, created_at = EXCLUDED.created_at)
                    DELETE FROM subscriptions WHERE db = \(dbID) AND owner = \(owner) AND id = ANY(\(deletes))
                    RETURNING id
                    """
                ).map { try $0.decode(String.self) })
            return zip(operations, results).map { operation, result in
                if let result { return result }
                let id = operation.subscriptionID
                return removed.contains(id)
                    ? .deleted(subscriptionID: id)
                    : StorageAnswers.unknownSubscription(id)
            }
        }
    }

    public func listSubscriptions(owner: String, in database: DatabaseKey) async throws -> [SubscriptionDefinition] {
        try await rows(
            """
            SELECT s.definition FROM databases d JOIN subscriptions s ON s.db = d.id
            WHERE \(database: database) AND s.owner = \(owner)
            ORDER BY s.id
            """
        ).compactMap { SubscriptionDefinition(storedDefinition: try $0.decode(String.self)) }
    }

    public func lookupSubscriptions(_ ids: [String], owner: String, in database: DatabaseKey) async throws
        -> [SubscriptionDefinition?]
    {
        var found: [String: SubscriptionDefinition] = [:]
        for row in try await rows(
            """
            SELECT s.id, s.definition FROM databases d JOIN subscriptions s ON s.db = d.id
            WHERE \(database: database) AND s.owner = \(owner) AND s.id = ANY(\(ids))
            """)
        {
            let (id, definition) = try row.decode((String, String).self)
            found[id] = SubscriptionDefinition(storedDefinition: definition)
        }
        return ids.map { found[$0] }
    }

    /// Decodes `owner, definition, created_at` rows.
    static func subscriptions(_ rows: [PostgresRow]) throws -> [StoredSubscription] {
        try rows.compactMap { row in
            let (owner, definition, createdAt) = try row.decode((String, String, Int64).self)
            return SubscriptionDefinition(storedDefinition: definition).map {
                StoredSubscription(subscription: $0, owner: owner, createdAt: createdAt)
            }
        }
    }
}
