import Foundation
import NimbusProtocol
import Testing

/// The change feed reader that skips the JSON tree: whenever it reads a page, the page is what
/// the general way (``JSON/parse(_:)`` and ``Record/init(wire:)``) reads; it gives up on
/// everything else, so callers fall back to the general way.
@Suite("Change feed page reader")
struct ChangeFeedPageTests {
    /// The general way: the members other than `records`, and the records, when every element
    /// is a live record that decodes; `nil` otherwise.
    static func general(_ bytes: [UInt8]) -> (members: [String: JSON], records: [Record])? {
        guard let json = try? JSON.parse(bytes), case .object(var members) = json else { return nil }
        var records: [Record] = []
        if let items = members.removeValue(forKey: "records") {
            guard case .array(let elements) = items else { return nil }
            for element in elements {
                if element["deleted"]?.bool == true || element["serverErrorCode"] != nil { return nil }
                guard let record = try? Record(wire: WireReader(element)) else { return nil }
                records.append(record)
            }
        }
        return (members, records)
    }

    /// Checks the reader against the general way; returns whether it read the page.
    @discardableResult
    static func check(_ bytes: [UInt8], _ comment: @autoclosure () -> String = "") -> Bool {
        guard let page = ChangeFeedPage.parse(bytes) else { return false }
        let expected = general(bytes)
        #expect(expected != nil, "read a page the general way refuses: \(comment())")
        #expect(page.members == expected?.members, "\(comment())")
        #expect(page.records == expected?.records, "\(comment())")
        return true
    }

    static let zone = ZoneID(zoneName: "ReadingList", ownerRecordName: "_u1")

    static func records() -> [Record] {
        let fields: [String: FieldValue] = [
            "title": .string("Caf\u{E9} \"quoted\" \\ back\nslash \u{1F600} \u{1}"),
            "count": .int64(-9_223_372_036_854_775_807), "ratio": .double(0.1), "whole": .double(3),
            "addedAt": .timestamp(1_700_000_000_123), "blob": .bytes(Data([0, 1, 254, 255])),
            // TIMESTAMPs with fractions of a millisecond (`millisecondFraction`).
            "editedAt": FieldValue(date: Date(timeIntervalSinceReferenceDate: 817_654_321.123_456_7)),
            "stamps": .list(
                elementType: .timestamp, [.timestamp(5), FieldValue(date: Date(timeIntervalSinceReferenceDate: -1.000_3))]),
            "tags": .list(elementType: .string, [.string("a"), .string("b")]),
            "scores": .list(elementType: .double, [.double(1.5), .double(-2)]),
            "article": .reference(Reference(recordName: "art-1", zoneID: zone, action: .deleteSelf)),
            "where": .location(Location(latitude: 52.5, longitude: 13.4, altitude: 34)),
        ]
        return (0..<3).map { i in
            var record = Record(
                recordName: "rec-\(i)", recordType: "Bookmark", recordChangeTag: "t\(i)", fields: i == 1 ? [:] : fields,
                created: RecordStamp(timestamp: 1_700_000_000_000, userRecordName: "_u1"),
                modified: i == 2 ? nil : RecordStamp(timestamp: 1_700_000_001_000, userRecordName: "_u1", deviceID: "d"))
            record.zoneID = zone
            return record
        }
    }

    static func page(_ records: [JSON], extra: [String: JSON] = [:]) -> [UInt8] {
        var members: [String: JSON] = [
            "records": .array(records), "syncToken": "tok-1", "moreComing": true, "zoneID": zone.wireJSON,
        ]
        members.merge(extra) { _, new in new }
        return JSON.object(members).serializedBytes()
    }

    @Test func aServerPageIsReadAsTheGeneralWayReadsIt() throws {
        let bytes = Self.page(Self.records().map { $0.wireJSON() })
        #expect(Self.check(bytes))
        let page = try #require(ChangeFeedPage.parse(bytes))
        #expect(page.records == Self.records())
        #expect(page.members["syncToken"] == "tok-1")
    }

    /// The reader reuses the previous stamp's user and device names when the bytes repeat
    /// them: a longer or shorter name, an escaped spelling of the same name, or a name with
    /// escapes after it is still read as the general way reads it.
    @Test func repeatedStampNamesAreReadAsTheGeneralWayReadsThem() throws {
        let user = "_1aa9ba3c9675c019e0fe9cc1bae81842"
        let escapedUser = #"\u005f1aa9ba3c9675c019e0fe9cc1bae81842"#
        let spellings = [
            #""\#(user)""#, #""\#(user)""#, #""\#(user)x""#, #""\#(user.dropLast())""#, #""\#(escapedUser)""#,
            #""\#(user)""#, #""a\"quoted\\name that is long""#, #""a\"quoted\\name that is long""#, #""""#, #""""#,
            "null", "\"Caf\u{E9} device, not ASCII\"", "\"Caf\u{E9} device, not ASCII\"", #""\#(user)""#,
        ]
        let records = spellings.enumerated().map { index, spelling in
            #"{"recordName":"r\#(index)","recordType":"Note","created":{"timestamp":1,"userRecordName":\#(spelling)},"#
                + #""modified":{"deviceID":\#(spelling),"timestamp":2,"userRecordName":\#(spelling)}}"#
        }
        let text = #"{"records":["# + records.joined(separator: ",") + #"],"syncToken":"t"}"#
        #expect(Self.check(Array(text.utf8)))
        let page = try #require(ChangeFeedPage.parse(Array(text.utf8)))
        let users = page.records.map { $0.created?.userRecordName }
        #expect(users[0] == user && users[1] == user && users[4] == user && users[5] == user)
        #expect(users[2] == user + "x" && users[3] == String(user.dropLast()))
        #expect(users[6] == #"a"quoted\name that is long"# && users[7] == users[6])
        #expect(users[8] == "" && users[9] == "" && users[10] == nil && users[13] == user)
        #expect(users[11] == "Caf\u{E9} device, not ASCII" && users[12] == users[11])
        #expect(page.records.map { $0.modified?.deviceID } == users)
    }

    @Test func whitespaceMemberOrderNullsAndUntypedValuesAreReadAlike() {
        let text = """
            \u{FEFF}{ "zoneID" : {"zoneName":"ReadingList"}, "records" : [
              { "fields" : { "b" : { "type" : "INT64", "value" : "12" }, "n": {"value": 7}, "s": "bare",
                             "r": {"value": {"recordName": "x"}, "type": null, "extra": [1, {"y": 2}]} },
                "deleted" : false, "recordName" : "one", "recordType" : "Note", "recordChangeTag" : null,
                "created" : { "timestamp" : "17", "unknown": {} }, "modified": null, "zoneID": null, "other": [true] } ,
              { "recordName": "two", "recordType": "Note", "fields": null, "deleted": 0,
                "zoneID": { "ownerName": "_o", "x": [1], "zoneName": "Z" } },
              { "recordName": "three", "zoneID": { "ownerRecordName": "_u", "ownerName": "_o", "zoneName": "Z" } }
            ] , "syncToken" : "t" , "moreComing" : 0 }
            """
        #expect(Self.check(Array(text.utf8)))
        #expect(Self.check(Self.page([])))
        #expect(Self.check(Array(#"{"syncToken":"t"}"#.utf8)))
    }

    @Test func deletionsErrorsAndRecordsThatDoNotDecodeAreLeftToTheGeneralWay() {
        let record = Self.records()[0].wireJSON()
        guard case .object(let members) = record else { return }
        func with(_ key: String, _ value: JSON) -> JSON {
            var changed = members
            changed[key] = value
            return .object(changed)
        }
        let refused: [[UInt8]] = [
            Self.page([record, .object(["recordName": "gone", "deleted": true])]),
            Self.page([.object(["recordName": "r", "serverErrorCode": "NOT_FOUND", "reason": "no"])]),
            Self.page([with("fields", ["f": ["value": "x", "type": "NO_SUCH_TYPE"]])]),
            Self.page([with("fields", ["": ["value": "x", "type": "STRING"]])]),
            Self.page([with("fields", ["f": ["value": .double(1.5), "type": "INT64"]])]),
            Self.page([with("fields", ["f": ["recordName": "bare reference"]])]),
            Self.page([with("recordName", 12)]),
            Self.page([with("created", "yesterday")]),
            Self.page([with("zoneID", ["zoneName": ""])]),
            Self.page([with("zoneID", ["ownerRecordName": "_u1"])]),
            Self.page([with("deleted", "no")]),
            Self.page([], extra: ["records": "none"]),
            Self.page([.string("not a record")]),
            Self.page([record]) + Array(" x".utf8),
            Array(Self.page([record]).dropLast()),
            Array("[]".utf8),
        ]
        for (index, bytes) in refused.enumerated() {
            #expect(ChangeFeedPage.parse(bytes) == nil, "case \(index) was read")
        }
    }

    @Test("mutated pages: never read differently from the general way")
    func mutatedPages() {
        var random = SplitMix64(seed: 0xFEED_0001)
        let base = Self.page(Self.records().map { $0.wireJSON() })
        let alphabet = Array("{}[]\":,0123456789-+.eEtrufalsn \\/bfnrtu".utf8)
        var read = 0
        for round in 0..<3_000 {
            let bytes = random.mutated(base, from: alphabet)
            if Self.check(bytes, "round \(round)") { read += 1 }
        }
        #expect(read > 100, "some mutations should keep the page readable (read \(read))")
    }
}

extension SplitMix64 {
    /// `bytes` with one to three bytes replaced, removed or inserted (from `alphabet`).
    mutating func mutated(_ bytes: [UInt8], from alphabet: [UInt8]) -> [UInt8] {
        var bytes = bytes
        for _ in 0..<int(1...3) {
            let position = int(0..<bytes.count)
            switch int(0..<3) {
            case 0: bytes[position] = pick(alphabet)
            case 1: bytes.remove(at: position)
            default: bytes.insert(pick(alphabet), at: position)
            }
        }
        return bytes
    }
}

/// Records with sharing members (docs/SHARING.md) take the general way, which hands the SDK
/// their JSON: `Record` has no place for `parent`, `share` or a share's participants.
@Suite("Change feed page reader: sharing members")
struct ChangeFeedPageSharingTests {
    @Test(arguments: [
        #""parent":{"recordName":"album-1","action":"NONE"}"#,
        #""share":{"recordName":"share-1","action":"NONE"}"#,
        #""participants":[]"#, #""publicPermission":"NONE""#, #""shortGUID":"abc""#,
    ])
    func aRecordWithASharingMemberIsLeftToTheGeneralWay(member: String) {
        let page = #"{"records":[{"recordName":"r","recordType":"T","fields":{},\#(member)}],"syncToken":"t"}"#
        #expect(ChangeFeedPage.parse(Array(page.utf8)) == nil)
    }

    @Test func aNullSharingMemberIsNoSharingMember() {
        let page = #"{"records":[{"recordName":"r","recordType":"T","fields":{},"parent":null,"share":null}],"syncToken":"t"}"#
        #expect(ChangeFeedPage.parse(Array(page.utf8))?.records.count == 1)
    }
}
