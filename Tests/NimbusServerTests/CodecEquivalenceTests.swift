import Foundation
import NimbusProtocol
import Testing

/// The JSON codec and the direct record writers are tuned for speed (see
/// docs/PERFORMANCE.md); these tests pin their output to the straightforward forms they
/// replaced, byte for byte.
@Suite("Codec equivalence")
struct CodecEquivalenceTests {
    @Test("serialized() equals the reference writer on random documents")
    func writerMatchesReference() {
        var random = SeededRandom(seed: 42)
        for _ in 0..<2_000 {
            let value = random.json(depth: 0)
            #expect(value.serialized() == ReferenceWriter.serialize(value))
        }
    }

    @Test("parse inverts serialized(), and later duplicate members win")
    func parserRoundTrips() throws {
        var random = SeededRandom(seed: 7)
        for _ in 0..<2_000 {
            let value = random.json(depth: 0)
            #expect(try JSON.parse(value.serialized()) == value)
        }
        let duplicate = try JSON.parse(#"{"a": 1, "b": {"c": true}, "a": 2}"#)
        #expect(duplicate == .object(["a": .number("2"), "b": .object(["c": .bool(true)])]))
        #expect(try JSON.parse("{}") == .object([:]))
        #expect(try JSON.parse(#"{"a":{}}"#) == .object(["a": .object([:])]))
        #expect(throws: JSONSyntaxError.self) { try JSON.parse(#"{"a":1,}"#) }
        #expect(throws: JSONSyntaxError.self) { try JSON.parse(#"{"a":1 "b":2}"#) }
    }

    @Test("fieldsJSONText equals fieldsJSON(_:).serialized() for every field type")
    func fieldsTextMatchesTree() {
        var random = SeededRandom(seed: 3)
        for _ in 0..<1_000 {
            var fields: [String: FieldValue] = [:]
            for index in 0..<random.int(0...8) {
                fields[random.key() + "\(index)"] = random.fieldValue(listDepth: 0)
            }
            for numbersAsStrings in [false, true] {
                #expect(
                    Record.fieldsJSONText(fields, numbersAsStrings: numbersAsStrings)
                        == ReferenceWriter.serialize(Record.fieldsJSON(fields, numbersAsStrings: numbersAsStrings)))
            }
        }
    }

    @Test("error reasons name the path of the offending value")
    func readerPaths() throws {
        func reason(_ body: String, _ read: (WireReader) throws(CloudKitError) -> Void) throws -> String? {
            let reader = WireReader(try JSON.parse(body))
            do throws(CloudKitError) {
                try read(reader)
                return nil
            } catch {
                return error.reason
            }
        }
        let operations = #"{"operations":[{"record":{}},{"record":{"recordName":7,"fields":{"a":{"value":"x","type":"INT64"},"b":{"value":[1,"x"]}}}}]}"#
        #expect(
            try reason(operations) { body throws(CloudKitError) in
                _ = try Record(wire: try body.required("operations").array()[1].required("record"))
            } == "'operations[1].record.recordName' must be a string, got a number")
        #expect(
            try reason(#"{"fields":{"a":{"value":"x","type":"INT64"}}}"#) { body throws(CloudKitError) in
                _ = try Record(wire: body)
            } == "'fields.a.value' must be an integer in the 64-bit range, got a string")
        #expect(
            try reason(#"{"fields":{"b":{"value":[1,"x"]}}}"#) { body throws(CloudKitError) in
                _ = try Record(wire: body)
            } == "'fields.b.value[1]' must be an integer in the 64-bit range, got a string")
        #expect(
            try reason(#"{"value":"x","type":"INT64"}"#) { body throws(CloudKitError) in _ = try FieldValue(wire: body) }
                == "'.value' must be an integer in the 64-bit range, got a string")
        #expect(
            try reason(#"{"a":[{"b":true}]}"#) { body throws(CloudKitError) in
                _ = try body.required("a").array()[0].optionalString("b")
            } == "'a[0].b' must be a string, got a boolean")
        #expect(
            try reason(#"{"a":{"b":"x"}}"#) { body throws(CloudKitError) in _ = try body.required("a").optionalInt("b") }
                == "'a.b' must be an integer in the 64-bit range, got a string")
        #expect(
            try reason(#"{"a":2}"#) { body throws(CloudKitError) in _ = try body.optionalBool("a") }
                == "'a' must be a boolean, got a number")
        #expect(
            try reason(#"{"a":{}}"#) { body throws(CloudKitError) in _ = try body.required("a").required("zoneName") }
                == "'a.zoneName' is required")
        #expect(
            try reason(#"[]"#) { body throws(CloudKitError) in _ = try body.optional("a") }
                == "the request body must be an object, got an array")
        let scalars = WireReader(try JSON.parse(#"{"a":null,"b":"1","c":1}"#))
        #expect(try scalars.optionalString("a") == nil)
        #expect(try scalars.optionalInt("b") == 1)
        #expect(try scalars.optionalBool("c") == true)
    }

    @Test("records in modify answers and change feeds are canonical JSON")
    func recordResponsesAreCanonical() async throws {
        try await TestServer.with { server in
            let alice = try await server.user("alice", device: "device-\u{1F600}-\"quoted\"")
            #expect(try await alice.createZone("Z").status == 200)
            let fields: [String: JSON] = [
                "title": ["value": "tab\tnew\nline \"quoted\" \\ \u{1}", "type": "STRING"],
                "count": ["value": .number("-9223372036854775808")],
                "ratio": ["value": .number("0.1"), "type": "DOUBLE"],
                "when": ["value": .number("1700000000000"), "type": "TIMESTAMP"],
                "blob": ["value": "aGVsbG8=", "type": "BYTES"],
                "place": ["value": ["latitude": .number("47.5"), "longitude": .number("-122.25"), "altitude": .number("12")]],
                "link": ["value": ["recordName": "other", "action": "NONE"], "type": "REFERENCE"],
                "names": ["value": ["a", "b\u{e9}"]],
                "empty": ["value": [], "type": "INT64_LIST"],
            ]
            let record: JSON = ["recordName": "r\u{e9}cord", "recordType": "Item", "fields": .object(fields)]
            let modify = try await alice.modify("Z", [["operationType": "create", "record": record]])
            #expect(modify.status == 200)
            #expect(modify.text == ReferenceWriter.serialize(modify.json))
            #expect(modify.records.first?["fields"]?["title"]?["value"] == fields["title"]?["value"])
            #expect(modify.records.first?["serverErrorCode"] == nil)

            let changes = try await alice.changes("Z")
            #expect(changes.status == 200)
            #expect(changes.text == ReferenceWriter.serialize(changes.json))
            #expect(changes.records.first?["recordName"] == "r\u{e9}cord")
            #expect(changes.records.first?["created"]?["deviceID"] == .string("device-\u{1F600}-\"quoted\""))

            // A tombstone and a live record in one page.
            let token = try #require(changes["syncToken"]?.string)
            #expect(try await alice.modify("Z", [op("create", "second")]).status == 200)
            #expect(try await alice.modify("Z", [op("forceDelete", "r\u{e9}cord")]).status == 200)
            let delta = try await alice.changes("Z", since: token)
            #expect(delta.status == 200)
            #expect(delta.text == ReferenceWriter.serialize(delta.json))
            #expect(delta.records.count == 2)
            #expect(delta.records.last?["deleted"] == .bool(true))
        }
    }
}

/// The JSON writer as it was before it was tuned: sorted keys, each looked up again;
/// strings escaped byte by byte.
enum ReferenceWriter {
    static func serialize(_ value: JSON) -> String {
        var out: [UInt8] = []
        write(value, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    static func write(_ value: JSON, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: Array("null".utf8))
        case .bool(let flag): out.append(contentsOf: Array((flag ? "true" : "false").utf8))
        case .number(let text), .raw(let text): out.append(contentsOf: text.utf8)
        case .rawUTF8(let bytes): out.append(contentsOf: bytes)
        case .string(let text): writeString(text, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { out.append(UInt8(ascii: ",")) }
                write(element, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (offset, key) in members.keys.sorted().enumerated() {
                if offset > 0 { out.append(UInt8(ascii: ",")) }
                writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(members[key]!, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func writeString(_ value: String, into out: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                out.append(contentsOf: Array("\\u00".utf8))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

/// A small deterministic generator (SplitMix64).
struct SeededRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.count))
    }

    static let pieces: [String] = [
        "a", "Z", "0", " ", "\"", "\\", "/", "\n", "\r", "\t", "\u{0}", "\u{1F}", "\u{7F}", "\u{e9}", "\u{2028}",
        "\u{1F600}", "recordName", "ü", "日本", "long text with spaces ",
    ]

    mutating func string() -> String {
        (0..<int(0...12)).map { _ in Self.pieces[int(0...(Self.pieces.count - 1))] }.joined()
    }

    mutating func key() -> String {
        ["a", "b", "title", "recordName", "Zed", "_x", "é", "k\"ey", "line\nbreak", "" ][int(0...9)] + string().prefix(3)
    }

    mutating func json(depth: Int) -> JSON {
        switch int(0...(depth > 3 ? 4 : 6)) {
        case 0: return .null
        case 1: return .bool(int(0...1) == 1)
        case 2: return .number(["0", "-1", "9223372036854775807", "1.5e-7", "3.25"][int(0...4)])
        case 3, 4: return .string(string())
        case 5: return .array((0..<int(0...5)).map { _ in json(depth: depth + 1) })
        default:
            var members: [String: JSON] = [:]
            for _ in 0..<int(0...7) { members[key()] = json(depth: depth + 1) }
            return .object(members)
        }
    }

    mutating func fieldValue(listDepth: Int) -> FieldValue {
        switch int(0...(listDepth > 0 ? 6 : 7)) {
        case 0: return .string(string())
        case 1: return .int64([0, -1, Int64.max, Int64.min, 42][int(0...4)])
        case 2: return .double([0.1, -2.5, 1e300, 3, 1e16, .infinity][int(0...5)])
        case 3:
            // Whole milliseconds, or with a fraction of one (`millisecondFraction`).
            let fraction = [0, 1, -(1 << 53), (1 << 53) - 1, 3 << 40][int(0...4)]
            return .timestamp(Int64(int(0...2_000_000_000)) * 1000, fraction: Int64(fraction))
        case 4: return .bytes(Data(string().utf8))
        case 5:
            return .location(
                Location(
                    latitude: 12.5, longitude: -3.25, horizontalAccuracy: int(0...1) == 1 ? 5 : nil,
                    altitude: int(0...1) == 1 ? 100.5 : nil, timestamp: int(0...1) == 1 ? 1_700_000_000_000 : nil))
        case 6:
            return .reference(
                Reference(
                    recordName: string() + "x", zoneID: int(0...1) == 1 ? ZoneID(zoneName: "Z", ownerRecordName: "_o") : nil,
                    action: [.none, .deleteSelf, .validate][int(0...2)]))
        default:
            let element = fieldValue(listDepth: 1)
            let elementType = element.type
            let values = (0..<int(0...4)).map { _ in
                var value = fieldValue(listDepth: 1)
                while value.type != elementType { value = fieldValue(listDepth: 1) }
                return value
            }
            return .list(elementType: elementType, values)
        }
    }
}
