import Foundation
import NimbusProtocol
import Testing

/// Fuzzes the server's decoding of query dictionaries (`records/query` and query
/// subscriptions: `{recordType, filterBy, sortBy}`) and the evaluator that runs decoded
/// filters against records. Any input must decode to a query or fail with BAD_REQUEST;
/// a decoded query must survive a round trip through its wire form and text, and
/// evaluating it against any record must not trap.
@Suite("Query filter decoding fuzzing")
struct QueryFilterFuzzTests {
    /// Decodes `json` as a query; when that succeeds, checks the round trips and evaluates
    /// the query against `records`. Returns whether it decoded.
    @discardableResult
    static func check(_ json: JSON, records: [Record]) -> Bool {
        let query: RecordQuery
        do {
            query = try RecordQuery(wire: WireReader(json, path: "query"))
        } catch {
            #expect(error.code == .badRequest, "\(json.serialized()): \(error)")
            #expect(!error.reason.isEmpty)
            return false
        }
        let wire = query.wireJSON
        // A non-finite number (`1e400` as a DOUBLE) has no JSON form: it must be refused.
        #expect(!Self.holdsNull(wire), "\(json.serialized()) decoded to a non-finite number")
        #expect(
            (try? RecordQuery(wire: WireReader(wire))) == query,
            "the wire form of \(json.serialized()) does not decode to the same query: \(wire.serialized())")
        let text = wire.serialized()
        #expect((try? RecordQuery(wire: WireReader(try JSON.parse(text)))) == query, "\(text)")
        for record in records {
            _ = query.matches(record)
        }
        return true
    }

    /// Whether a wire form holds `null`, which only a non-finite double writes.
    static func holdsNull(_ json: JSON) -> Bool {
        switch json {
        case .null: return true
        case .array(let elements): return elements.contains(where: holdsNull)
        case .object(let members): return members.values.contains(where: holdsNull)
        default: return false
        }
    }

    @Test("generated query dictionaries decode or fail with BAD_REQUEST; decoded ones round trip")
    func generatedQueries() {
        var random = SplitMix64(seed: 0x5155_4552)
        let records = (0..<8).map { _ in random.record() }
        var decoded = 0
        for _ in 0..<3_000 {
            if Self.check(random.queryJSON(), records: records) { decoded += 1 }
        }
        #expect(decoded > 300, "the generator should make valid queries too (made \(decoded))")
    }

    @Test("mutated query texts: a syntax error, BAD_REQUEST, or a query that round trips")
    func mutatedQueryTexts() {
        var random = SplitMix64(seed: 0x4D51_5559)
        let records = (0..<6).map { _ in random.record() }
        for _ in 0..<2_500 {
            var bytes = Array(random.queryJSON().serialized().utf8)
            for _ in 0..<random.int(1..<3) { random.mutate(&bytes) }
            guard let json = try? JSON.parse(bytes) else { continue }
            Self.check(json, records: records)
        }
    }

    @Test(
        "NEAR needs a finite distance of 0 or more; other comparators drop a distance",
        arguments: ["-1", "1e400", "-1e400", "\"far\"", "null"])
    func nearDistance(_ distance: String) throws {
        let near = #"{"recordType":"T","filterBy":[{"comparator":"NEAR","fieldName":"place","distance":\#(distance),"fieldValue":{"value":{"latitude":1,"longitude":2}}}]}"#
        #expect(throws: CloudKitError.self) { try RecordQuery(wire: WireReader(try JSON.parse(near))) }
        let equals = #"{"recordType":"T","filterBy":[{"comparator":"EQUALS","fieldName":"n","distance":\#(distance),"fieldValue":{"value":1}}]}"#
        let query = try RecordQuery(wire: WireReader(try JSON.parse(equals)))
        #expect(query.filters.first?.distance == nil)
        #expect(try RecordQuery(wire: WireReader(query.wireJSON)) == query)
    }

    @Test("random JSON in every slot of a filter fails with BAD_REQUEST, never a trap")
    func randomValuesInEverySlot() {
        var random = SplitMix64(seed: 0x534C_4F54)
        let records = (0..<4).map { _ in random.record() }
        let slots = ["comparator", "fieldName", "systemFieldName", "fieldValue", "distance"]
        for _ in 0..<2_000 {
            guard case .object(var query) = random.queryJSON(), case .array(var filters)? = query["filterBy"],
                !filters.isEmpty, case .object(var filter) = filters[0]
            else { continue }
            filter[random.pick(slots)] = random.chance(0.5) ? random.jsonValue(depth: 2) : random.fieldValueJSON()
            filters[0] = .object(filter)
            query["filterBy"] = .array(filters)
            if random.chance(0.3) { query["sortBy"] = random.jsonValue(depth: 3) }
            Self.check(.object(query), records: records)
        }
    }
}

extension SplitMix64 {
    static let comparators = QueryFilter.Comparator.allCases.map(\.rawValue) + ["equals", "Near", "LIKE", ""]
    static let systemNames = QueryFilter.SystemField.allCases.map(\.rawValue) + ["___createTime", "recordID", "nope"]
    static let fieldNames = ["title", "count", "tags", "where", "___all", "allTokens", "", "é", "a.b"]

    /// A `{value, type?}` field value dictionary, often well-typed, sometimes not.
    mutating func fieldValueJSON() -> JSON {
        let types = FieldType.allCases.map(\.rawValue) + ["ASSET", "BOOLEAN", "int64"]
        var value: JSON
        switch int(0..<9) {
        case 0: value = .string(string())
        case 1: value = .number(numberText())
        case 2: value = .bool(chance(0.5))
        case 3:
            value = .object([
                "latitude": .number(pick(["0", "52.5", "-90", "90.000001", "1e400", "-180"])),
                "longitude": .number(pick(["0", "13.4", "180", "-180.5", "-1e400"])),
            ])
        case 4: value = .object(["recordName": .string(string()), "action": .string(pick(["NONE", "DELETE_SELF", "VALIDATE", "x"]))])
        case 5: value = .array((0..<int(0..<4)).map { _ in .string(string()) })
        case 6: value = .array((0..<int(0..<4)).map { _ in .number(numberText()) })
        case 7: value = .string(pick(["AAEC", "not base64!", "", "_-8"]))
        default: value = jsonValue(depth: 2)
        }
        if chance(0.15) { return value }  // a bare value, as some clients send
        var members: [String: JSON] = ["value": value]
        if chance(0.6) { members["type"] = .string(pick(types)) }
        return .object(members)
    }

    /// A query dictionary from plausible parts.
    mutating func queryJSON() -> JSON {
        var query: [String: JSON] = [:]
        if chance(0.95) { query["recordType"] = chance(0.95) ? .string(pick(["Note", "T", "é"])) : jsonValue(depth: 1) }
        var filters: [JSON] = []
        for _ in 0..<int(0..<4) {
            var filter: [String: JSON] = [:]
            if chance(0.95) { filter["comparator"] = .string(pick(Self.comparators)) }
            switch int(0..<10) {
            case 0: filter["systemFieldName"] = .string(pick(Self.systemNames))
            case 1:
                filter["systemFieldName"] = .string(pick(Self.systemNames))
                filter["fieldName"] = .string(pick(Self.fieldNames))
            case 2: break
            default: filter["fieldName"] = .string(pick(Self.fieldNames))
            }
            if chance(0.95) { filter["fieldValue"] = fieldValueJSON() }
            if chance(0.3) { filter["distance"] = .number(pick(["0", "1500", "-1", "1e400", numberText()])) }
            filters.append(.object(filter))
        }
        if chance(0.9) { query["filterBy"] = .array(filters) }
        if chance(0.4) {
            var sort: [String: JSON] = chance(0.8) ? ["fieldName": .string(pick(Self.fieldNames))] : ["systemFieldName": .string(pick(Self.systemNames))]
            if chance(0.5) { sort["ascending"] = chance(0.8) ? .bool(chance(0.5)) : jsonValue(depth: 0) }
            if chance(0.3) { sort["relativeLocation"] = fieldValueJSON() }
            query["sortBy"] = .array([.object(sort)])
        }
        return .object(query)
    }

    /// A record with a few fields of every kind, to evaluate decoded queries against.
    mutating func record() -> Record {
        var fields: [String: FieldValue] = [:]
        let values: [FieldValue] = [
            .string(string()), .int64(Int64.random(in: .min ... .max, using: &self)), .double(Double(int(-1_000...1_000)) / 7),
            .timestamp(Int64(int(0...2_000_000_000)) * 1000), .bytes(Data([1, 2, 3])),
            .location(Location(latitude: Double(int(-90...90)), longitude: Double(int(-180...180)))),
            .reference(Reference(recordName: string().isEmpty ? "r" : "r\(int(0...9))")),
            .list(elementType: .string, (0..<int(0..<4)).map { _ in .string(string()) }),
            .list(elementType: .int64, (0..<int(0..<4)).map { _ in .int64(Int64(int(-5...5))) }),
            .double(.greatestFiniteMagnitude), .int64(.min),
        ]
        for name in Self.fieldNames where chance(0.6) { fields[name] = pick(values) }
        return Record(
            recordName: "r\(int(0...9))", recordType: pick(["Note", "T", "é"]), fields: fields,
            created: RecordStamp(timestamp: Int64(int(0...1_000)), userRecordName: chance(0.5) ? "_u" : nil),
            modified: chance(0.5) ? RecordStamp(timestamp: .max) : nil)
    }
}
