import Foundation
import NimbusProtocol
import Testing

/// The next page's token read from a change feed answer's text before its records: found in
/// every answer a Nimbus server writes that says more are coming, and `nil` for anything
/// it cannot be sure of (the caller then waits for the full read, which decides).
@Suite("Change feed token hint")
struct ChangeFeedTokenHintTests {
    static let zone = ChangeFeedPageTests.zone

    /// A server's answer, as its JSON writer lays it out.
    static func answer(token: String, moreComing: Bool = true, records: [JSON]? = nil, extra: [String: JSON] = [:]) -> [UInt8] {
        var members: [String: JSON] = [
            "records": .array(records ?? ChangeFeedPageTests.records().map { $0.wireJSON() }), "syncToken": .string(token),
            "moreComing": .bool(moreComing), "zoneID": zone.wireJSON,
        ]
        members.merge(extra) { _, new in new }
        return JSON.object(members).serializedBytes()
    }

    @Test func aServersAnswerThatSaysMoreAreComingNamesItsToken() {
        #expect(ChangeFeedPage.nextTokenHint(Self.answer(token: "r3.AAAB-c_d=")) == "r3.AAAB-c_d=")
        // With the count of what follows, which sorts before the token.
        #expect(ChangeFeedPage.nextTokenHint(Self.answer(token: "t2", extra: ["remainingChanges": 12])) == "t2")
        #expect(ChangeFeedPage.nextTokenHint(Self.answer(token: "t2", records: [])) == "t2")
        #expect(ChangeFeedPage.nextTokenHint(Data(Self.answer(token: "in data"))) == "in data")
    }

    @Test func theLastPageAndOtherLayoutsGiveNoHint() {
        #expect(ChangeFeedPage.nextTokenHint(Self.answer(token: "t", moreComing: false)) == nil)
        let spaced = #"{ "moreComing": true, "records": [], "syncToken": "t", "zoneID": {"zoneName": "Z"} }"#
        #expect(ChangeFeedPage.nextTokenHint(Array(spaced.utf8)) == nil)
        let reordered = #"{"syncToken":"t","moreComing":true,"records":[]}"#
        #expect(ChangeFeedPage.nextTokenHint(Array(reordered.utf8)) == nil)
        #expect(ChangeFeedPage.nextTokenHint(Array(#"{"moreComing":true,"records":[]}"#.utf8)) == nil)
        #expect(ChangeFeedPage.nextTokenHint([UInt8]()) == nil)
    }

    @Test func aTokenWithAnEscapeAControlOrAWideCharacterOrTooLongGivesNoHint() {
        for token in ["a\"b", "a\\b", "tab\there", "caf\u{E9}", "", String(repeating: "x", count: ChangeFeedPage.longestToken + 1)] {
            #expect(ChangeFeedPage.nextTokenHint(Self.answer(token: token)) == nil, "\(token.debugDescription)")
        }
        #expect(ChangeFeedPage.nextTokenHint(Self.answer(token: String(repeating: "x", count: ChangeFeedPage.longestToken))) != nil)
    }

    @Test func aRecordsOwnSyncTokenMemberIsNotTheAnswers() throws {
        // A record whose field and whose unknown member are both named `syncToken`.
        var record = try #require(ChangeFeedPageTests.records().first).wireJSON()
        if case .object(var members) = record {
            members["syncToken"] = "not-this"
            members["fields"] = ["syncToken": ["value": "nor-this", "type": "STRING"]]
            record = .object(members)
        }
        #expect(ChangeFeedPage.nextTokenHint(Self.answer(token: "this", records: [record])) == "this")
    }

    @Test("mutated answers: a hint is always a token of printable ASCII the answer spells out")
    func mutatedAnswers() {
        var random = SplitMix64(seed: 0xFEED_0002)
        let base = Self.answer(token: "r3.token-1")
        let alphabet = Array("{}[]\":,0123456789-+.eEtrufalsn \\/bfnrtu".utf8) + [0, 0x7F, 0xC3, 0xA9]
        // Every cut of the answer: the hint, where there is one, is the whole token.
        for length in 0...base.count {
            let hint = ChangeFeedPage.nextTokenHint(base.prefix(length))
            #expect(hint == nil || hint == "r3.token-1", "cut at \(length)")
        }
        for _ in 0..<3_000 {
            let bytes = random.mutated(base, from: alphabet)
            guard let hint = ChangeFeedPage.nextTokenHint(bytes) else { continue }
            #expect(!hint.isEmpty && hint.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") && $0 != UInt8(ascii: "\"") })
            #expect(String(decoding: bytes, as: UTF8.self).contains("\"syncToken\":\"\(hint)\""))
        }
    }
}
