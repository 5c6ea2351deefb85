import NimbusProtocol

/// `nimbus schema export` and `nimbus schema deploy`, over any ``SchemaStore`` (the CLI opens
/// the data directory beside the running server, which sees a deploy with its next request).
///
/// A deploy promotes a schema (the development schema, or a schema file) to production. As in
/// CloudKit it is additive: it may add record types, fields and indexes and change indexes and
/// grants, but a record type or field production has cannot be removed, nor a field's type
/// changed, since production records may hold them.
public enum SchemaDeployment {
    /// What a deploy changed in production.
    public struct Report: Sendable, Equatable {
        /// The production schema's version after the deploy.
        public var version: Int64
        public var addedRecordTypes: [String]
        /// `Type.field`, sorted.
        public var addedFields: [String]
        /// `Type.field KIND`, sorted.
        public var addedIndexes: [String]
        /// `Type.field KIND`, sorted.
        public var removedIndexes: [String]

        /// Whether production was already this schema.
        public var unchanged: Bool {
            addedRecordTypes.isEmpty && addedFields.isEmpty && addedIndexes.isEmpty && removedIndexes.isEmpty
        }
    }

    /// The schema of a container environment as ``SchemaFile`` text.
    public static func export(container: String, environment: ContainerEnvironment, from store: any SchemaStore)
        async throws -> String
    {
        SchemaFile.cloudKitText(of: try await store.schema(container: container, environment: environment).schema)
    }

    /// Makes `schema` the production schema of `container` (the development schema when `nil`).
    /// - Throws: BAD_REQUEST when the schema would remove a record type or field production has,
    ///   or change a field's type.
    public static func deploy(_ schema: ContainerSchema?, container: String, to store: any SchemaStore) async throws
        -> Report
    {
        let source: ContainerSchema
        if let schema {
            source = schema
        } else {
            source = try await store.schema(container: container, environment: .development).schema
        }
        for _ in 0..<10 {
            let production = try await store.schema(container: container, environment: .production)
            var report = try check(source, replacing: production.schema)
            // Who holds a role in production is production's own (an operator grants it there).
            let deployed = source.keepingRoleMembers(of: production.schema)
            if report.unchanged && deployed == production.schema {
                report.version = production.version
                return report
            }
            do {
                report.version = try await store.updateSchema(
                    deployed, container: container, environment: .production, expectedVersion: production.version)
                return report
            } catch let error as CloudKitError where error.code == .conflict {
                continue
            }
        }
        throw CloudKitError(.tryAgainLater, "the production schema of \(container) kept changing during the deploy; try again")
    }

    /// What replacing `production` by `new` changes.
    /// - Throws: BAD_REQUEST for removed record types or fields and changed field types.
    public static func check(_ new: ContainerSchema, replacing production: ContainerSchema) throws(CloudKitError)
        -> Report
    {
        var report = Report(version: 0, addedRecordTypes: [], addedFields: [], addedIndexes: [], removedIndexes: [])
        var problems: [String] = []
        for (typeName, old) in production.recordTypes {
            guard let type = new.recordTypes[typeName] else {
                problems.append("record type '\(typeName)' is in production and cannot be removed")
                continue
            }
            for (fieldName, field) in old.fields {
                guard let newField = type.fields[fieldName] else {
                    problems.append("field '\(typeName).\(fieldName)' is in production and cannot be removed")
                    continue
                }
                if newField.type != field.type {
                    problems.append(
                        "field '\(typeName).\(fieldName)' is \(field.type.rawValue) in production and cannot become "
                            + newField.type.rawValue)
                }
            }
        }
        guard problems.isEmpty else {
            throw .badRequest("the schema cannot be deployed: " + problems.sorted().joined(separator: "; "))
        }
        for (typeName, type) in new.recordTypes {
            let old = production.recordTypes[typeName]
            if old == nil { report.addedRecordTypes.append(typeName) }
            for fieldName in type.fields.keys where old?.fields[fieldName] == nil {
                report.addedFields.append("\(typeName).\(fieldName)")
            }
            let targets =
                type.fields.keys.map(QueryFilter.Target.field) + QueryFilter.SystemField.allCases.map(QueryFilter.Target.system)
            for target in targets {
                let now = type.indexes(on: target)
                let before = old?.indexes(on: target) ?? []
                let name = "\(typeName).\(target.name)"
                report.addedIndexes += now.subtracting(before).sorted().map { "\(name) \($0.rawValue)" }
                report.removedIndexes += before.subtracting(now).sorted().map { "\(name) \($0.rawValue)" }
            }
        }
        report.addedRecordTypes.sort()
        report.addedFields.sort()
        report.addedIndexes.sort()
        report.removedIndexes.sort()
        return report
    }
}
