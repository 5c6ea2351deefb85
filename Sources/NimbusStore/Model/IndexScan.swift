import Foundation
import NimbusProtocol

/// One read of an index of a record type: what ``RecordStore/scanIndex(_:in:)`` returns
/// candidates from. ``QueryExecutor`` plans `records/query` as a sequence of such scans,
/// evaluates the filters itself and sorts and pages engine-independently.
public struct IndexScan: Sendable, Hashable {
    public enum Source: Sendable, Hashable {
        /// Entries of the value index `index` (an index name, see ``IndexLayout/indexName(of:)``)
        /// whose key lies in `range`, ordered by `(key, recordName, zone)`: ascending, or
        /// descending when ``IndexScan/descending``.
        case values(index: String, range: IndexRange)
        /// Records having all (`matchAll`) or any of `tokens` in the token index of `field`,
        /// or of any field of the type when `field` is `nil`, ordered by `(recordName, zone)`
        /// ascending. Each record once.
        case tokens(field: String?, tokens: [String], matchAll: Bool)
    }

    public var recordType: String
    /// Only entries of this zone; `nil` for every zone of the database.
    public var zone: String?
    public var source: Source
    public var descending: Bool
    /// Only entries strictly after this position in the scan's order.
    public var after: IndexPosition?
    /// The most entries to return.
    public var limit: Int

    public init(
        recordType: String, zone: String?, source: Source, descending: Bool = false, after: IndexPosition? = nil,
        limit: Int
    ) {
        self.recordType = recordType
        self.zone = zone
        self.source = source
        self.descending = descending
        self.after = after
        self.limit = limit
    }
}

/// A range of index keys; either end may be open.
///
/// ``IndexValue/missing`` sorts after every value, but a range holds it only when
/// ``includesMissing`` says so: filters never match a record without the field, while a
/// sort over every record must see those records too.
public struct IndexRange: Sendable, Hashable {
    public struct Bound: Sendable, Hashable {
        public var value: IndexValue
        public var inclusive: Bool

        public init(_ value: IndexValue, inclusive: Bool) {
            self.value = value
            self.inclusive = inclusive
        }
    }

    public var lower: Bound?
    public var upper: Bound?
    /// Whether entries with the ``IndexValue/missing`` key are in the range.
    public var includesMissing: Bool

    public init(lower: Bound? = nil, upper: Bound? = nil, includesMissing: Bool = false) {
        self.lower = lower
        self.upper = upper
        self.includesMissing = includesMissing
    }

    /// Every entry of the index: every record of the type.
    public static let all = IndexRange(includesMissing: true)

    /// Exactly `value`.
    public static func equal(_ value: IndexValue) -> IndexRange {
        if value == .missing { return IndexRange(lower: Bound(.missing, inclusive: true), includesMissing: true) }
        return IndexRange(lower: Bound(value, inclusive: true), upper: Bound(value, inclusive: true))
    }

    /// Whether `value` lies in the range.
    public func contains(_ value: IndexValue) -> Bool {
        if value == .missing { return includesMissing }
        if let lower {
            let order = IndexValue.order(value, lower.value)
            if order == .orderedAscending || (order == .orderedSame && !lower.inclusive) { return false }
        }
        if let upper {
            let order = IndexValue.order(value, upper.value)
            if order == .orderedDescending || (order == .orderedSame && !upper.inclusive) { return false }
        }
        return true
    }
}

/// A place in an index's order. For token scans ``key`` is `nil`.
public struct IndexPosition: Sendable, Hashable {
    public var key: IndexValue?
    public var recordName: String
    public var zone: String

    public init(key: IndexValue?, recordName: String, zone: String) {
        self.key = key
        self.recordName = recordName
        self.zone = zone
    }
}

/// One entry a scan found: its position and the live record it points at.
public struct IndexHit: Sendable {
    public var position: IndexPosition
    public var record: StoredRecord

    public init(position: IndexPosition, record: StoredRecord) {
        self.position = position
        self.record = record
    }

    public var zone: String { position.zone }
}
