import NimbusProtocol

/// The schema of one container environment: its record types, their fields and field types,
/// the indexes queries may use, and who may read, create and write records of each type in
/// the public database.
///
/// In `development` the server extends it just in time: the first save of a record type or
/// field adds it, the first query that needs an index adds the index. In `production` it
/// changes only by `nimbus schema deploy`, and records and queries that do not fit it are
/// refused with BAD_REQUEST.
///
/// Its file form is CloudKit's schema language (`nimbus schema export`, ``SchemaFile``).
public struct ContainerSchema: Sendable, Hashable {
    public var recordTypes: [String: RecordTypeSchema]
    /// Roles the schema defines (`CREATE ROLE name;`), beside the built-in `_world`,
    /// `_icloud` and `_creator`, for ``Grant``s.
    public var roles: [String]
    /// The users (by user record name) an operator granted each of ``roles`` to in this
    /// environment (`nimbus role grant`, the dashboard), as CloudKit's console assigns
    /// security roles to user records. Nimbus keeps them with the environment's schema
    /// document, so they apply from the next request on every node; they are not part of
    /// CloudKit's schema language (``SchemaFile/cloudKitText(of:)`` leaves them out) and a
    /// deploy keeps production's own (``keepingRoleMembers(of:)``).
    public var roleMembers: [String: Set<String>]

    public init(recordTypes: [String: RecordTypeSchema] = [:], roles: [String] = [], roleMembers: [String: Set<String>] = [:]) {
        self.recordTypes = recordTypes
        self.roles = roles
        self.roleMembers = roleMembers
    }

    /// This schema with the role members of `stored` (the schema it replaces), for the roles
    /// it still declares: a schema an operator writes (a deploy, an edit) never changes who
    /// holds a role.
    public func keepingRoleMembers(of stored: ContainerSchema) -> ContainerSchema {
        var kept = self
        kept.roleMembers = stored.roleMembers.filter { roles.contains($0.key) && !$0.value.isEmpty }
        return kept
    }

    /// The value-index and token-index fields of every record type, as the engines keep them.
    public var indexLayout: IndexLayout {
        var layout = IndexLayout()
        for (name, type) in recordTypes {
            let valueFields = type.indexedFields(needing: [.queryable, .sortable])
            let tokenFields = type.indexedFields(needing: [.searchable])
            if !valueFields.isEmpty || !tokenFields.isEmpty {
                layout.recordTypes[name] = IndexLayout.RecordType(valueFields: valueFields, tokenFields: tokenFields)
            }
        }
        return layout
    }
}

/// One record type of a ``ContainerSchema``.
public struct RecordTypeSchema: Sendable, Hashable {
    /// The fields apps save, by name.
    public var fields: [String: FieldSchema]
    /// Indexes on the system fields every record has (`___recordID`, `___createTime`, …).
    public var systemIndexes: [QueryFilter.SystemField: Set<IndexKind>]
    /// Who may do what with records of this type in the public database, in file order.
    /// A new type gets ``Grant/defaults``.
    public var grants: [Grant]

    public init(
        fields: [String: FieldSchema] = [:], systemIndexes: [QueryFilter.SystemField: Set<IndexKind>] = [:],
        grants: [Grant] = Grant.defaults
    ) {
        self.fields = fields
        self.systemIndexes = systemIndexes
        self.grants = grants
    }

    /// The indexes declared on a query target.
    public func indexes(on target: QueryFilter.Target) -> Set<IndexKind> {
        switch target {
        case .field(let name): return fields[name]?.indexes ?? []
        case .system(let field): return systemIndexes[field] ?? []
        case .searchableFields:
            return fields.values.contains { $0.indexes.contains(.searchable) } ? [.searchable] : []
        }
    }

    /// Adds indexes on a query target (the field must exist).
    public mutating func addIndexes(_ kinds: Set<IndexKind>, on target: QueryFilter.Target) {
        switch target {
        case .field(let name): fields[name]?.indexes.formUnion(kinds)
        case .system(let field): systemIndexes[field, default: []].formUnion(kinds)
        case .searchableFields:
            for (name, field) in fields where kinds.contains(.searchable) && (field.type.elementType ?? field.type) == .string {
                fields[name]?.indexes.insert(.searchable)
            }
        }
    }

    /// The index names (``IndexLayout/indexName(of:)``) of the targets carrying any of `kinds`, sorted.
    func indexedFields(needing kinds: Set<IndexKind>) -> [String] {
        var names: [String] = []
        for (name, field) in fields where !field.indexes.isDisjoint(with: kinds) {
            names.append(name)
        }
        for (field, indexes) in systemIndexes where !indexes.isDisjoint(with: kinds) {
            names.append(IndexLayout.indexName(of: .system(field)))
        }
        return names.sorted()
    }
}

/// A field of a record type: its type and its indexes.
public struct FieldSchema: Sendable, Hashable {
    public var type: FieldType
    public var indexes: Set<IndexKind>

    public init(type: FieldType, indexes: Set<IndexKind> = []) {
        self.type = type
        self.indexes = indexes
    }
}

/// The index kinds of CloudKit's schema.
public enum IndexKind: String, Sendable, Hashable, CaseIterable, Comparable {
    /// Filters with the value comparators (EQUALS, LESS_THAN, IN, LIST_CONTAINS, NEAR, …).
    case queryable = "QUERYABLE"
    /// Filters with CONTAINS_ALL_TOKENS / CONTAINS_ANY_TOKENS (STRING and STRING_LIST fields).
    case searchable = "SEARCHABLE"
    /// `sortBy`.
    case sortable = "SORTABLE"

    public static func < (lhs: IndexKind, rhs: IndexKind) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One permission of a record type in the public database: `GRANT READ TO "_world"`.
public struct Grant: Sendable, Hashable {
    public enum Permission: String, Sendable, Hashable, CaseIterable {
        case read = "READ"
        case create = "CREATE"
        case write = "WRITE"
    }

    /// What the grant allows. CloudKit's schema files combine them (`GRANT READ, WRITE TO …`);
    /// Nimbus keeps one grant per permission.
    public var permission: Permission
    /// A role: `_world` (anyone, signed in or not), `_icloud` (any signed-in user),
    /// `_creator` (the record's creator), or a role the schema defines.
    public var role: String

    public init(_ permission: Permission, to role: String) {
        self.permission = permission
        self.role = role
    }

    /// Anyone reads, signed-in users create, a record's creator writes (CloudKit's defaults).
    public static let defaults: [Grant] = [
        Grant(.write, to: "_creator"), Grant(.create, to: "_icloud"), Grant(.read, to: "_world"),
    ]
}

/// A ``ContainerSchema`` with the version the store gave it: every change of the schema
/// advances the version, so a cached copy is current as long as the store's version is the same.
public struct VersionedSchema: Sendable, Hashable {
    public var schema: ContainerSchema
    /// 0 for a container environment whose schema was never written.
    public var version: Int64

    public init(schema: ContainerSchema, version: Int64) {
        self.schema = schema
        self.version = version
    }
}
