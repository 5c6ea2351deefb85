import Foundation
import NimbusProtocol
import NimbusStore

extension MemoryRecordStore {
    /// Index entries are worked out from the live records at each scan
    /// (``IndexEntries/values(of:fields:index:)``, ``IndexEntries/tokens(of:field:)``) for the
    /// indexes the layout declares, in the order an engine's index keeps them.
    public func scanIndex(_ scan: IndexScan, in database: DatabaseKey) async throws -> [IndexHit] {
        guard let type = layoutOf(scan.recordType) else { return [] }
        let records = liveRecords(of: scan.recordType, zone: scan.zone, in: database)
        switch scan.source {
        case .values(let index, let range):
            guard type.valueFields.contains(index) else { return [] }
            var hits: [IndexHit] = []
            for (zone, record) in records {
                let fields = record.fields()
                for key in IndexEntries.values(of: record, fields: fields, index: index) where range.contains(key) {
                    hits.append(IndexHit(position: IndexPosition(key: key, recordName: record.recordName, zone: zone), record: record))
                }
            }
            hits.sort { Self.precedes($0.position, $1.position, descending: scan.descending) }
            if let after = scan.after {
                hits.removeAll { !Self.precedes(after, $0.position, descending: scan.descending) }
            }
            return Array(hits.prefix(scan.limit))
        case .tokens(let field, let tokens, let matchAll):
            guard !tokens.isEmpty else { return [] }
            let fieldsSearched = field.map { type.tokenFields.contains($0) ? [$0] : [] } ?? type.tokenFields
            var hits: [IndexHit] = []
            for (zone, record) in records {
                let fields = record.fields()
                let held = fieldsSearched.reduce(into: Set<String>()) { $0.formUnion(IndexEntries.tokens(of: fields, field: $1)) }
                let matches = matchAll ? tokens.allSatisfy(held.contains) : tokens.contains(where: held.contains)
                guard matches else { continue }
                hits.append(IndexHit(position: IndexPosition(key: nil, recordName: record.recordName, zone: zone), record: record))
            }
            hits.sort { Self.precedes($0.position, $1.position, descending: false) }
            if let after = scan.after { hits.removeAll { !Self.precedes(after, $0.position, descending: false) } }
            return Array(hits.prefix(scan.limit))
        }
    }

    /// Whether `lhs` comes before `rhs` in an index's order: `(key, recordName, zone)`.
    static func precedes(_ lhs: IndexPosition, _ rhs: IndexPosition, descending: Bool) -> Bool {
        let order: ComparisonResult
        switch (lhs.key, rhs.key) {
        case let (left?, right?): order = IndexValue.order(left, right)
        default: order = .orderedSame
        }
        let ascending: Bool
        if order != .orderedSame {
            ascending = order == .orderedAscending
        } else if lhs.recordName != rhs.recordName {
            ascending = lhs.recordName < rhs.recordName
        } else if lhs.zone != rhs.zone {
            ascending = lhs.zone < rhs.zone
        } else {
            return false
        }
        return descending ? !ascending : ascending
    }
}
