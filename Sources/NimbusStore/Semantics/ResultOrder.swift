import Foundation
import NimbusProtocol

/// Where a record stands in a query's result order: its sort values, then its record name
/// and zone.
struct ResultPosition: Sendable, Hashable {
    var keys: [IndexValue]
    var recordName: String
    var zone: String
}

/// The total order of a query's results (see ``QueryExecutor``).
struct ResultOrder: Sendable {
    struct Key: Sendable {
        var target: QueryFilter.Target
        var ascending: Bool
        /// For a LOCATION field: the point distances are measured from (the key is the distance).
        var relativeLocation: Location?
    }

    let keys: [Key]

    init(_ sorts: [QuerySort]) {
        keys = sorts.map { Key(target: $0.target, ascending: $0.ascending, relativeLocation: $0.relativeLocation) }
    }

    /// Record name and zone break ties in the direction of the first key.
    var tiesAscending: Bool { keys.first?.ascending ?? true }

    func position(of stored: StoredRecord, fields: [String: FieldValue], zone: String) -> ResultPosition {
        let values = keys.map { key -> IndexValue in
            if let center = key.relativeLocation {
                guard case .field(let name) = key.target, case .location(let location)? = fields[name] else { return .missing }
                return .real(location.distance(to: center))
            }
            return IndexEntries.values(of: stored, fields: fields, index: IndexLayout.indexName(of: key.target)).first
                ?? .missing
        }
        return ResultPosition(keys: values, recordName: stored.recordName, zone: zone)
    }

    func compare(_ lhs: ResultPosition, _ rhs: ResultPosition) -> ComparisonResult {
        for (index, key) in keys.enumerated() {
            let order = IndexValue.order(lhs.keys[index], rhs.keys[index])
            if order != .orderedSame { return key.ascending ? order : order.reversed }
        }
        var order = IndexValue.order(.text(lhs.recordName), .text(rhs.recordName))
        if order == .orderedSame { order = IndexValue.order(.text(lhs.zone), .text(rhs.zone)) }
        return tiesAscending ? order : order.reversed
    }
}

extension ComparisonResult {
    var reversed: ComparisonResult {
        switch self {
        case .orderedAscending: return .orderedDescending
        case .orderedDescending: return .orderedAscending
        case .orderedSame: return .orderedSame
        }
    }
}

/// The opaque `continuationMarker` of a query page: the position of the page's last record
/// in the result order, bound to the query it came from.
struct ContinuationMarker: Sendable {
    var fingerprint: UInt64
    var position: ResultPosition

    var encoded: String {
        let json: JSON = [
            "v": 1, "q": .string(String(fingerprint, radix: 16)), "k": .array(position.keys.map(Self.json)),
            "n": .string(position.recordName), "z": .string(position.zone),
        ]
        return Base64URL.encode(json.serializedBytes())
    }

    /// The position a marker holds.
    /// - Throws: BAD_REQUEST when the marker is not one this server issued, or was issued
    ///   for another query or zone.
    static func decode(_ marker: String, fingerprint: UInt64, keyCount: Int) throws(CloudKitError) -> ResultPosition {
        let invalid = CloudKitError.badRequest("'continuationMarker' is not a marker this server issued")
        guard let bytes = Base64URL.decode(marker), let text = String(bytes: bytes, encoding: .utf8),
            let json = try? JSON.parse(text),
            json["v"]?.int64 == 1, let query = json["q"]?.string, let name = json["n"]?.string,
            let zone = json["z"]?.string, let keys = json["k"]?.array
        else { throw invalid }
        guard query == String(fingerprint, radix: 16) else {
            throw .badRequest(
                "'continuationMarker' belongs to a different query or zone; send the query that returned it, unchanged")
        }
        var values: [IndexValue] = []
        for key in keys {
            guard let value = Self.value(key) else { throw invalid }
            values.append(value)
        }
        guard values.count == keyCount else { throw invalid }
        return ResultPosition(keys: values, recordName: name, zone: zone)
    }

    static func json(_ value: IndexValue) -> JSON {
        switch value {
        case .integer(let number): return ["i": .string(String(number))]
        case .real(let number): return ["r": .string("\(number)")]
        case .text(let text): return ["t": .string(text)]
        case .missing: return ["m": true]
        }
    }

    static func value(_ json: JSON) -> IndexValue? {
        if let text = json["i"]?.string { return Int64(text).map(IndexValue.integer) }
        // Only finite numbers: the server never stores another, so no marker of its holds one.
        if let text = json["r"]?.string { return Double(text).flatMap { $0.isFinite ? IndexValue.real($0) : nil } }
        if let text = json["t"]?.string { return .text(text) }
        if json["m"] != nil { return .missing }
        return nil
    }

    /// A stable 64-bit FNV-1a hash of the query's wire form and the zone (Swift's `Hasher`
    /// is seeded per process, and markers outlive processes).
    static func fingerprint(of query: RecordQuery, zone: String?) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in query.wireJSON.serializedBytes() + Array("\u{0}\(zone ?? "\u{1}")".utf8) {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return hash
    }
}
