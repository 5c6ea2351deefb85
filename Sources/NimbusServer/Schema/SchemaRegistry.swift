import NimbusProtocol
import NimbusStore

/// The schemas of container environments as the server applies them: cached per container
/// environment and checked against the store's version on every request, so a schema the
/// `nimbus` CLI deploys while the server runs takes effect with the next request.
///
/// In development it extends the schema just in time (new record types and fields on save,
/// indexes on the first query that needs them); in production it only checks.
///
/// The actor holds the cache and serializes changes; checking a request's records and
/// planning a query run outside it, so one request's large batch never holds up another's
/// (a flood's requests run at a low CPU priority, see ``BackgroundLane``: the actor must not
/// wait on them).
actor SchemaRegistry {
    struct Key: Hashable {
        var container: String
        var environment: ContainerEnvironment
    }

    let store: any SchemaStore
    private var cache: [Key: VersionedSchema] = [:]

    init(store: any SchemaStore) {
        self.store = store
    }

    /// The current schema of a container environment.
    func current(_ container: String, _ environment: ContainerEnvironment) async throws -> VersionedSchema {
        let key = Key(container: container, environment: environment)
        let version = try await store.schemaVersion(container: container, environment: environment)
        if let cached = cache[key], cached.version == version { return cached }
        let fresh = try await store.schema(container: container, environment: environment)
        if fresh.version >= (cache[key]?.version ?? 0) { cache[key] = fresh }
        return fresh
    }

    /// Applies `change` to the current schema and stores the result when `change` returns
    /// `true`, reading again and retrying when another writer got there first.
    func update(
        _ container: String, _ environment: ContainerEnvironment,
        _ change: @Sendable (inout ContainerSchema) throws(CloudKitError) -> Bool
    ) async throws -> VersionedSchema {
        let key = Key(container: container, environment: environment)
        for _ in 0..<20 {
            var current = try await self.current(container, environment)
            guard try change(&current.schema) else { return current }
            do {
                current.version = try await store.updateSchema(
                    current.schema, container: container, environment: environment, expectedVersion: current.version)
                cache[key] = current
                return current
            } catch let error as CloudKitError where error.code == .conflict {
                continue
            }
        }
        throw CloudKitError(.tryAgainLater, "the schema of \(container) is changing too often to apply this request; try again")
    }

    /// Checks the records a modify request saves against the schema (coercing compatible
    /// values in place); in development, adds their new types and fields.
    /// - Parameter untyped: each record's values sent without `type` (``UntypedValues``), in
    ///   the order of `records`: typed by the schema first where it knows their fields.
    nonisolated func admit(_ records: inout [Record], untyped: [UntypedValues], database: DatabaseKey) async throws {
        let environment = database.environment
        var current = try await self.current(database.container, environment)
        let original = records
        var checked = try Self.typed(original, untyped, by: current.schema)
        if try SchemaRules.admit(&checked, to: current.schema, environment: environment) != nil {
            current = try await update(database.container, environment) { schema throws(CloudKitError) in
                var again = try Self.typed(original, untyped, by: schema)
                guard let extended = try SchemaRules.admit(&again, to: schema, environment: environment) else { return false }
                schema = extended
                return true
            }
            // Coerce against the schema as stored (another request may have added a field first).
            checked = try Self.typed(original, untyped, by: current.schema)
            _ = try SchemaRules.admit(&checked, to: current.schema, environment: environment)
        }
        records = checked
    }

    /// `records` with their untyped values typed by `schema`.
    private static func typed(_ records: [Record], _ untyped: [UntypedValues], by schema: ContainerSchema)
        throws(CloudKitError) -> [Record]
    {
        var typed = records
        for (index, values) in zip(typed.indices, untyped) { try values.apply(to: &typed[index], in: schema) }
        return typed
    }

    /// The plan of a query, checked against the schema. In development the indexes it needs
    /// are added (built over the existing records) on first use; in production a missing index
    /// is BAD_REQUEST naming the record type, field and index kind.
    nonisolated func plan(_ query: RecordQuery, database: DatabaseKey) async throws -> QueryPlan {
        let environment = database.environment
        let current = try await self.current(database.container, environment)
        guard let type = current.schema.recordTypes[query.recordType] else {
            throw CloudKitError.badRequest(
                "record type '\(query.recordType)' is not in the \(environment.rawValue) schema of \(database.container)"
                    + (environment == .development
                        ? " (no record of that type was saved yet)" : "; deploy a schema that has it"))
        }
        let plan = try QueryPlan(query, schema: type)
        guard environment == .development else {
            let missing = plan.missingIndexes(in: type)
            guard missing.isEmpty else {
                let names = missing.map { requirement in
                    requirement.isAllTokens
                        ? "no field of record type '\(query.recordType)' is SEARCHABLE"
                        : "field '\(requirement.target.name)' of record type '\(query.recordType)' is not marked "
                            + requirement.kind.rawValue
                }
                throw CloudKitError.badRequest(
                    names.joined(separator: "; ")
                        + " in the production schema; add the index in development (a query there adds it) and deploy the schema")
            }
            return plan
        }
        var wanted = type
        wanted.addIndexes(for: plan.requirements)
        guard wanted != type else { return plan }
        _ = try await update(database.container, environment) { schema throws(CloudKitError) in
            guard var type = schema.recordTypes[query.recordType] else { return false }
            let before = type
            type.addIndexes(for: plan.requirements)
            schema.recordTypes[query.recordType] = type
            return type != before
        }
        return plan
    }
}
