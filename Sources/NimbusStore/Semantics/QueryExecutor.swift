import Foundation
import NimbusProtocol

/// Runs a ``QueryPlan`` over any ``RecordStore``: picks the index to read, reads it with
/// ``RecordStore/scanIndex(_:in:)``, filters with the shared evaluator
/// (``RecordQuery/matches(_:)``), sorts and pages. Engines only provide index scans.
///
/// **Order.** Results come in the order of the sort keys, then by record name and zone (in
/// the direction of the first sort key; ascending without sort keys). A record without a
/// sorted field sorts as if its value were greater than every value: last ascending, first
/// descending (as PostgreSQL sorts NULL).
///
/// **Paging.** A page ends with a continuation marker holding the last record's position in
/// that order (its sort values, record name and zone), and the next page starts strictly
/// after it (keyset pagination, not an offset): records inserted or deleted between pages
/// neither shift nor repeat the others.
///
/// **Plans.** When an index's own order is the result order the executor streams it, reading
/// only until the page is full: the sorted field's index (with the sorted field's filters as
/// the range) for one sort key; without sort keys, an EQUALS or LIST_CONTAINS filter's
/// entries, a token search, or the record-name index. Otherwise it reads every candidate of
/// the most selective filter's index and sorts in memory; a very selective filter (few
/// candidates) is preferred to streaming a sort.
public struct QueryExecutor: Sendable {
    public let store: any RecordStore

    /// Filter candidates read before the executor prefers streaming the sort index instead.
    static let selectiveCandidateLimit = 2_000
    /// Entries per index read.
    static let batchSize = 500

    public init(store: any RecordStore) {
        self.store = store
    }

    /// One page of results.
    /// - Parameters:
    ///   - zone: the zone to search, or `nil` for every zone of the database (`zoneWide`).
    ///   - limit: the most records to return.
    ///   - marker: the previous page's continuation marker.
    public func run(
        _ plan: QueryPlan, zone: String?, limit: Int, continuationMarker marker: String?, in database: DatabaseKey
    ) async throws -> QueryPage {
        let order = ResultOrder(plan.query.sorts)
        let fingerprint = ContinuationMarker.fingerprint(of: plan.original, zone: zone)
        let after = try marker.map { marker throws(CloudKitError) in
            try ContinuationMarker.decode(marker, fingerprint: fingerprint, keyCount: order.keys.count)
        }
        let context = Context(plan: plan, order: order, zone: zone, limit: limit, after: after, database: database)
        let matches: [Match]
        if let streaming = streamingSource(context) {
            let selective = plan.query.sorts.isEmpty ? nil : selectiveSources(context, besides: streaming)
            if let selective, let hits = try await readAll(selective, context, cap: Self.selectiveCandidateLimit) {
                matches = try sortAndPage(hits, context)
            } else {
                matches = try await stream(streaming, context)
            }
        } else {
            let sources = selectiveSources(context, besides: nil) ?? [fullSource(context)]
            matches = try sortAndPage(try await readAll(sources, context, cap: nil) ?? [], context)
        }
        let page = Array(matches.prefix(limit))
        let next =
            matches.count > limit
            ? ContinuationMarker(fingerprint: fingerprint, position: page.last!.position).encoded : nil
        return QueryPage(hits: page.map(\.hit), continuationMarker: next)
    }

    // MARK: - Choosing a source

    struct Context {
        var plan: QueryPlan
        var order: ResultOrder
        var zone: String?
        var limit: Int
        var after: ResultPosition?
        var database: DatabaseKey

        var filters: [QueryFilter] { plan.query.filters }

        func scan(_ source: IndexScan.Source, descending: Bool = false, after: IndexPosition? = nil, limit: Int)
            -> IndexScan
        {
            IndexScan(
                recordType: plan.query.recordType, zone: zone, source: source, descending: descending, after: after,
                limit: limit)
        }
    }

    static let recordNameIndex = IndexLayout.indexName(of: .system(.recordName))

    /// An index whose own order is the result order, or `nil`.
    func streamingSource(_ context: Context) -> IndexScan.Source? {
        let sorts = context.plan.query.sorts
        if sorts.count == 1, sorts[0].relativeLocation == nil {
            let target = sorts[0].target
            return .values(index: IndexLayout.indexName(of: target), range: range(on: target, context.filters) ?? .all)
        }
        guard sorts.isEmpty else { return nil }
        // Without sort keys the result order is (recordName, zone): the order of one key's
        // entries, of token hits, and of the record-name index.
        for filter in context.filters {
            if let point = pointKey(filter) {
                return .values(index: IndexLayout.indexName(of: filter.target), range: .equal(point))
            }
        }
        if let tokens = tokenSource(context.filters) { return tokens }
        // Reading the record-name index in full is the last resort: an IN (a few point reads)
        // narrows better.
        let recordNameFilters = context.filters.filter { $0.target == .system(.recordName) }
        if context.filters.isEmpty
            || (recordNameFilters.contains { Self.range(of: $0) != nil } && !context.filters.contains { $0.comparator == .in })
        {
            return .values(index: Self.recordNameIndex, range: range(on: .system(.recordName), context.filters) ?? .all)
        }
        return nil
    }

    /// The scans of the most selective filter (one per key of an IN), on an index other
    /// than `streaming`'s; `nil` when no filter narrows the candidates.
    func selectiveSources(_ context: Context, besides streaming: IndexScan.Source?) -> [IndexScan.Source]? {
        var streamedIndex: String?
        if case .values(let index, _)? = streaming { streamedIndex = index }
        var options: [[IndexScan.Source]] = []
        for filter in context.filters {
            if let point = pointKey(filter) {
                options.append([.values(index: IndexLayout.indexName(of: filter.target), range: .equal(point))])
            }
        }
        if let tokens = tokenSource(context.filters) { options.append([tokens]) }
        for filter in context.filters where filter.comparator == .in {
            let keys = QueryFilter.elements(of: filter.value).compactMap(IndexValue.init)
            let index = IndexLayout.indexName(of: filter.target)
            options.append(keys.map { .values(index: index, range: .equal($0)) })
        }
        if streaming == nil {
            for filter in context.filters {
                if let range = Self.range(of: filter) {
                    options.append([.values(index: IndexLayout.indexName(of: filter.target), range: range)])
                }
            }
        }
        return options.first { sources in
            sources.allSatisfy { source in
                if case .values(let index, _) = source { return index != streamedIndex }
                return streamedIndex != nil || streaming == nil
            }
        }
    }

    /// Every record of the type: a filtered or sorted field's index (each holds every record).
    func fullSource(_ context: Context) -> IndexScan.Source {
        let target =
            context.filters.first { !$0.comparator.isTokenSearch }?.target
            ?? context.plan.query.sorts.first?.target ?? .system(.recordName)
        return .values(index: IndexLayout.indexName(of: target), range: .all)
    }

    /// The single key an EQUALS or LIST_CONTAINS(_ALL) filter reads, if any.
    func pointKey(_ filter: QueryFilter) -> IndexValue? {
        switch filter.comparator {
        case .equals, .listContains: return IndexValue(filter.value)
        case .listContainsAll: return QueryFilter.elements(of: filter.value).first.flatMap(IndexValue.init)
        default: return nil
        }
    }

    func tokenSource(_ filters: [QueryFilter]) -> IndexScan.Source? {
        for filter in filters where filter.comparator.isTokenSearch {
            guard case .string(let text) = filter.value else { continue }
            let field: String?
            switch filter.target {
            case .field(let name): field = name
            case .searchableFields: field = nil
            case .system: continue
            }
            let tokens = QueryFilter.tokens(of: text).sorted()
            guard !tokens.isEmpty else { continue }
            return .tokens(field: field, tokens: tokens, matchAll: filter.comparator == .containsAllTokens)
        }
        return nil
    }

    /// The keys of `target`'s index that can satisfy every filter on it (a superset; the
    /// evaluator decides), or `nil` when no filter bounds it.
    func range(on target: QueryFilter.Target, _ filters: [QueryFilter]) -> IndexRange? {
        var result: IndexRange?
        for filter in filters where filter.target == target {
            guard let range = Self.range(of: filter) else { continue }
            result = result.map { $0.intersection(range) } ?? range
        }
        return result
    }

    /// The keys a filter can match, when its comparator reads a contiguous range. A TIMESTAMP
    /// is indexed by its whole milliseconds: its bounds include their millisecond, where
    /// values before and after the filter's fraction of it lie (the evaluator decides).
    static func range(of filter: QueryFilter) -> IndexRange? {
        typealias Bound = IndexRange.Bound
        let wholeMilliseconds = filter.value.type == .timestamp
        switch filter.comparator {
        case .equals, .listContains:
            return IndexValue(filter.value).map(IndexRange.equal)
        case .lessThan, .lessThanOrEquals:
            return IndexValue(filter.value).map {
                IndexRange(upper: Bound($0, inclusive: wholeMilliseconds || filter.comparator == .lessThanOrEquals))
            }
        case .greaterThan, .greaterThanOrEquals:
            return IndexValue(filter.value).map {
                IndexRange(lower: Bound($0, inclusive: wholeMilliseconds || filter.comparator == .greaterThanOrEquals))
            }
        case .beginsWith, .listMemberBeginsWith:
            guard case .string(let prefix) = filter.value else { return nil }
            return IndexRange(
                lower: Bound(.text(prefix), inclusive: true), upper: Bound(.text(prefix + "\u{10FFFF}"), inclusive: true))
        case .near:
            guard case .location(let center) = filter.value, let distance = filter.distance else { return nil }
            // A degree of latitude is at least 110 574 m long.
            let degrees = distance / 110_574 + 1e-9
            return IndexRange(
                lower: Bound(.real(center.latitude - degrees), inclusive: true),
                upper: Bound(.real(center.latitude + degrees), inclusive: true))
        default:
            return nil
        }
    }

    // MARK: - Reading

    struct Match {
        var hit: IndexHit
        var position: ResultPosition
    }

    /// Where a streamed index resumes after a result position.
    func resume(_ source: IndexScan.Source, after: ResultPosition, _ context: Context) -> IndexPosition {
        switch source {
        case .tokens:
            return IndexPosition(key: nil, recordName: after.recordName, zone: after.zone)
        case .values(let index, let range):
            let key: IndexValue
            if let first = after.keys.first {
                key = first
            } else if index == Self.recordNameIndex {
                key = .text(after.recordName)
            } else {
                key = range.lower?.value ?? .missing
            }
            return IndexPosition(key: key, recordName: after.recordName, zone: after.zone)
        }
    }

    /// Reads `source` in its own order from the result position on, until `limit + 1` matches.
    func stream(_ source: IndexScan.Source, _ context: Context) async throws -> [Match] {
        let descending = context.order.keys.first.map { !$0.ascending } ?? false
        var position = context.after.map { resume(source, after: $0, context) }
        var matches: [Match] = []
        var batch = max(context.limit + 1, 64)
        while matches.count <= context.limit {
            let hits = try await store.scanIndex(
                context.scan(source, descending: descending, after: position, limit: batch), in: context.database)
            for hit in hits where matches.count <= context.limit {
                if let match = try evaluate(hit, context) { matches.append(match) }
            }
            guard hits.count == batch, let last = hits.last else { break }
            position = last.position
            batch = min(batch * 2, Self.batchSize * 4)
        }
        return matches
    }

    /// Every hit of `sources`, each record once; `nil` when there are more than `cap`.
    func readAll(_ sources: [IndexScan.Source], _ context: Context, cap: Int?) async throws -> [IndexHit]? {
        var hits: [IndexHit] = []
        var seen = Set<RecordKey>()
        for source in sources {
            var position: IndexPosition?
            while true {
                let batch = try await store.scanIndex(
                    context.scan(source, after: position, limit: Self.batchSize), in: context.database)
                for hit in batch where seen.insert(RecordKey(zone: hit.zone, name: hit.record.recordName)).inserted {
                    hits.append(hit)
                }
                if let cap, hits.count > cap { return nil }
                guard batch.count == Self.batchSize, let last = batch.last else { break }
                position = last.position
            }
        }
        return hits
    }

    struct RecordKey: Hashable {
        var zone: String
        var name: String
    }

    func sortAndPage(_ hits: [IndexHit], _ context: Context) throws -> [Match] {
        var matches: [Match] = []
        for hit in hits {
            if let match = try evaluate(hit, context) { matches.append(match) }
        }
        matches.sort { context.order.compare($0.position, $1.position) == .orderedAscending }
        return Array(matches.prefix(context.limit + 1))
    }

    /// The hit as a match with its result position, if it matches and lies after the marker.
    func evaluate(_ hit: IndexHit, _ context: Context) throws(CloudKitError) -> Match? {
        let record = hit.record.record(
            zoneID: ZoneID(zoneName: hit.zone, ownerRecordName: context.database.owner))
        guard context.plan.query.matches(record) else { return nil }
        let position = context.order.position(of: hit.record, fields: record.fields, zone: hit.zone)
        if let after = context.after, context.order.compare(position, after) != .orderedDescending { return nil }
        return Match(hit: hit, position: position)
    }
}

/// A page of query results.
public struct QueryPage: Sendable {
    /// The records, each with its zone, in result order.
    public var hits: [IndexHit]
    /// Where the next page starts; `nil` when this page is the last.
    public var continuationMarker: String?
}

extension IndexRange {
    /// The keys in both ranges.
    func intersection(_ other: IndexRange) -> IndexRange {
        func tighter(_ a: Bound?, _ b: Bound?, lower: Bool) -> Bound? {
            guard let a else { return b }
            guard let b else { return a }
            switch IndexValue.order(a.value, b.value) {
            case .orderedSame: return Bound(a.value, inclusive: a.inclusive && b.inclusive)
            case .orderedAscending: return lower ? b : a
            case .orderedDescending: return lower ? a : b
            }
        }
        return IndexRange(
            lower: tighter(lower, other.lower, lower: true), upper: tighter(upper, other.upper, lower: false),
            includesMissing: includesMissing && other.includesMissing)
    }
}
