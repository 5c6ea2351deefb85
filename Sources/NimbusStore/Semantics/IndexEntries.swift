import Foundation
import NimbusProtocol

/// Which index entries an engine keeps, per record type: derived from a schema's indexes
/// (``ContainerSchema/indexLayout``).
///
/// - A *value index* of a field (QUERYABLE or SORTABLE) holds one entry per record of the
///   type: `(value, recordName, zone)`, one per member for a list, and ``IndexValue/missing``
///   for a record without the field (or with an empty list), so that every record of the
///   type is in every value index of its type.
/// - A *token index* of a field (SEARCHABLE) holds `(token, recordName, zone)` for each token
///   of the field's text (``QueryFilter/tokens(of:)``, the evaluator's own tokenizer).
///
/// System fields are indexed under CloudKit's schema names (``indexName(of:)``).
public struct IndexLayout: Sendable, Hashable {
    public struct RecordType: Sendable, Hashable {
        /// Index names with a value index, sorted.
        public var valueFields: [String]
        /// Field names with a token index, sorted.
        public var tokenFields: [String]

        public init(valueFields: [String], tokenFields: [String]) {
            self.valueFields = valueFields
            self.tokenFields = tokenFields
        }
    }

    public var recordTypes: [String: RecordType]

    public init(recordTypes: [String: RecordType] = [:]) {
        self.recordTypes = recordTypes
    }

    /// The name index entries of a target carry: the field name, or for a system field its
    /// name in CloudKit's schema (`___recordID`, `___createTime`, `___modTime`,
    /// `___createdBy`, `___modifiedBy`). Apps cannot save fields beginning with `___`.
    public static func indexName(of target: QueryFilter.Target) -> String {
        switch target {
        case .field(let name): return name
        case .system(let field): return field.schemaName
        case .searchableFields: return "___all"
        }
    }

    /// The target an index name stands for.
    public static func target(ofIndexName name: String) -> QueryFilter.Target {
        QueryFilter.SystemField.allCases.first { $0.schemaName == name }.map(QueryFilter.Target.system) ?? .field(name)
    }
}

extension QueryFilter.SystemField {
    /// The field's name in CloudKit's schema language.
    public var schemaName: String {
        switch self {
        case .recordName: return "___recordID"
        case .createdTimestamp: return "___createTime"
        case .modifiedTimestamp: return "___modTime"
        case .createdUserRecordName: return "___createdBy"
        case .modifiedUserRecordName: return "___modifiedBy"
        }
    }
}

/// One key of a value index. Values order as the evaluator orders them within a kind
/// (numbers numerically, text by Unicode scalars); numbers sort before text, and
/// ``missing`` after every value.
public enum IndexValue: Sendable, Hashable {
    case integer(Int64)
    case real(Double)
    case text(String)
    /// The record has no value for the field.
    case missing

    /// The order of two index values.
    public static func order(_ lhs: IndexValue, _ rhs: IndexValue) -> ComparisonResult {
        switch (lhs, rhs) {
        case (.missing, .missing): return .orderedSame
        case (.missing, _): return .orderedDescending
        case (_, .missing): return .orderedAscending
        case (.text(let left), .text(let right)):
            if left.utf8.elementsEqual(right.utf8) { return .orderedSame }
            return left.utf8.lexicographicallyPrecedes(right.utf8) ? .orderedAscending : .orderedDescending
        case (.text, _): return .orderedDescending
        case (_, .text): return .orderedAscending
        case (.integer(let left), .integer(let right)):
            return left == right ? .orderedSame : (left < right ? .orderedAscending : .orderedDescending)
        default:
            let left = lhs.number, right = rhs.number
            return left == right ? .orderedSame : (left < right ? .orderedAscending : .orderedDescending)
        }
    }

    private var number: Double {
        switch self {
        case .integer(let value): return Double(value)
        case .real(let value): return value
        default: return .nan
        }
    }

    /// The key a scalar field value is indexed under, or `nil` for values that are not
    /// indexed (BYTES, ASSET, and lists, whose members are indexed one by one).
    public init?(_ value: FieldValue) {
        switch value {
        case .string(let text): self = .text(text)
        case .int64(let number), .timestamp(let number, _): self = .integer(number)
        case .double(let number): self = .real(number)
        case .reference(let reference): self = .text(reference.recordName)
        case .location(let location): self = .real(location.latitude)
        case .bytes, .encryptedBytes, .asset, .list: return nil
        }
    }
}

/// The index entries of one record, as every engine computes them.
public enum IndexEntries {
    /// The value-index keys of a record for an index name: one per distinct list member,
    /// ``IndexValue/missing`` when the record has no indexable value.
    public static func values(of record: StoredRecord, fields: [String: FieldValue], index name: String) -> [IndexValue] {
        switch IndexLayout.target(ofIndexName: name) {
        case .system(.recordName): return [.text(record.recordName)]
        case .system(.createdTimestamp): return [.integer(record.created.timestamp)]
        case .system(.modifiedTimestamp): return [.integer(record.modified.timestamp)]
        case .system(.createdUserRecordName): return [record.created.userRecordName.map(IndexValue.text) ?? .missing]
        case .system(.modifiedUserRecordName): return [record.modified.userRecordName.map(IndexValue.text) ?? .missing]
        case .searchableFields: return []
        case .field(let field):
            switch fields[field] {
            case .list(_, let members)?:
                var keys: [IndexValue] = []
                for member in members {
                    if let key = IndexValue(member), !keys.contains(key) { keys.append(key) }
                }
                return keys.isEmpty ? [.missing] : keys
            case let value?:
                return [IndexValue(value) ?? .missing]
            case nil:
                return [.missing]
            }
        }
    }

    /// The tokens of a field's text (a STRING, or the members of a STRING_LIST).
    public static func tokens(of fields: [String: FieldValue], field: String) -> Set<String> {
        switch fields[field] {
        case .string(let text)?: return QueryFilter.tokens(of: text)
        case .list(_, let members)?:
            var tokens = Set<String>()
            for case .string(let text) in members { tokens.formUnion(QueryFilter.tokens(of: text)) }
            return tokens
        default: return []
        }
    }

    /// All entries of a live record for the indexes of its type: `(index name, key)` pairs
    /// and `(field, token)` pairs. A tombstone has none.
    public static func entries(of record: StoredRecord, layout: IndexLayout.RecordType) throws(CloudKitError)
        -> (values: [(index: String, value: IndexValue)], tokens: [(field: String, token: String)])
    {
        guard !record.deleted else { return ([], []) }
        let fields = record.fields()
        var values: [(index: String, value: IndexValue)] = []
        for name in layout.valueFields {
            for value in Self.values(of: record, fields: fields, index: name) { values.append((name, value)) }
        }
        var tokens: [(field: String, token: String)] = []
        for field in layout.tokenFields {
            for token in Self.tokens(of: fields, field: field).sorted() { tokens.append((field, token)) }
        }
        return (values, tokens)
    }
}

/// One value-index entry: the row an engine keeps.
public struct ValueIndexEntry: Sendable, Hashable {
    public var type: String
    /// The index name (``IndexLayout/indexName(of:)``).
    public var index: String
    public var value: IndexValue
    public var recordName: String
    public var zone: String
}

/// One token-index entry.
public struct TokenIndexEntry: Sendable, Hashable {
    public var type: String
    public var field: String
    public var token: String
    public var recordName: String
    public var zone: String
}

/// The entries a write removes and adds, for an engine to apply in the write's transaction.
public struct IndexEntryChanges: Sendable {
    public var removedValues: [ValueIndexEntry] = []
    public var addedValues: [ValueIndexEntry] = []
    public var removedTokens: [TokenIndexEntry] = []
    public var addedTokens: [TokenIndexEntry] = []

    public init() {}

    public var isEmpty: Bool {
        removedValues.isEmpty && addedValues.isEmpty && removedTokens.isEmpty && addedTokens.isEmpty
    }
}

extension IndexEntries {
    /// Every entry of a record of zone `zone` for `layout` (none for a tombstone).
    public static func rows(of record: StoredRecord, zone: String, layout: IndexLayout.RecordType?) throws(CloudKitError)
        -> (values: Set<ValueIndexEntry>, tokens: Set<TokenIndexEntry>)
    {
        guard let layout, !record.deleted else { return ([], []) }
        let entries = try Self.entries(of: record, layout: layout)
        let name = record.recordName
        return (
            Set(entries.values.map { ValueIndexEntry(type: record.recordType, index: $0.index, value: $0.value, recordName: name, zone: zone) }),
            Set(entries.tokens.map { TokenIndexEntry(type: record.recordType, field: $0.field, token: $0.token, recordName: name, zone: zone) })
        )
    }

    /// What writing `changes` to zone `zone` does to the index entries: the entries only the
    /// old row had are removed, those only the new row has are added. A record changed more
    /// than once (a cascade deleting a record the request also saved) counts from its first
    /// old row to its last new row.
    /// - Parameter layout: the index layout of a record type (`nil` for a type without indexes).
    public static func changes(
        _ changes: [(before: StoredRecord?, after: StoredRecord)], zone: String,
        layout: (String) throws -> IndexLayout.RecordType?
    ) throws -> IndexEntryChanges {
        let indexed = try changes.contains { change in
            try layout(change.after.recordType) != nil || change.before.map { try layout($0.recordType) != nil } == true
        }
        guard indexed else { return IndexEntryChanges() }
        var order: [String] = []
        var net: [String: (before: StoredRecord?, after: StoredRecord)] = [:]
        for (before, after) in changes {
            if let first = net[after.recordName] {
                net[after.recordName] = (first.before, after)
            } else {
                order.append(after.recordName)
                net[after.recordName] = (before, after)
            }
        }
        var result = IndexEntryChanges()
        for (before, after) in order.map({ net[$0]! }) {
            let none: (values: Set<ValueIndexEntry>, tokens: Set<TokenIndexEntry>) = ([], [])
            let old = try before.map { try rows(of: $0, zone: zone, layout: try layout($0.recordType)) } ?? none
            let new = try rows(of: after, zone: zone, layout: try layout(after.recordType))
            result.removedValues += old.values.subtracting(new.values)
            result.addedValues += new.values.subtracting(old.values)
            result.removedTokens += old.tokens.subtracting(new.tokens)
            result.addedTokens += new.tokens.subtracting(old.tokens)
        }
        return result
    }
}
