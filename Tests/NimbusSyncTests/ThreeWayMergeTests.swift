import Foundation
import NimbusProtocol
import NimbusSync
import NimbusTestSupport
import Testing

@Suite("Three-way merge")
struct ThreeWayMergeTests {
    @Test func fieldsOnlyOneSideChangedMergeWithoutConflict() {
        let (merged, resolutions) = ThreeWayMerge.merge(
            ancestor: ["title": "a", "read": 0], local: ["title": "b", "read": 0], server: ["title": "a", "read": 1],
            rules: MergeRules())
        #expect(merged == ["title": "b", "read": 1])
        #expect(resolutions.isEmpty)
    }

    @Test func bothChangedUsesTheFieldPolicyAndLogsTheLoser() {
        let rules = MergeRules(fields: ["title": .serverWins])
        let (merged, resolutions) = ThreeWayMerge.merge(
            ancestor: ["title": "a", "note": "x"], local: ["title": "mine", "note": "local"],
            server: ["title": "theirs", "note": "server"], rules: rules)
        #expect(merged["title"] == "theirs")
        #expect(merged["note"] == "local")  // default: client wins
        #expect(resolutions.map(\.field) == ["note", "title"])
        #expect(resolutions.first { $0.field == "title" }?.winner == .server)
        #expect(resolutions.first { $0.field == "title" }?.lostValue?.contains("mine") == true)
    }

    /// A file's asset fetched again comes with a new download URL: that is no change on the
    /// server's side, so this device's new file (and the fields it changed with it) go
    /// through together, even under `serverWins`.
    @Test func anAssetReadAgainIsNoChange() {
        func asset(_ checksum: String, url: String?) -> FieldValue {
            .asset(NimbusProtocol.Asset(fileChecksum: checksum, size: 1, downloadURL: url))
        }
        let rules = MergeRules(defaultPolicy: .serverWins)
        let (merged, resolutions) = ThreeWayMerge.merge(
            ancestor: ["content": asset("old", url: "https://a/1"), "sha": "old", "folder": "x"],
            local: ["content": asset("new", url: "file:///staged"), "sha": "new", "folder": "x"],
            server: ["content": asset("old", url: "https://a/2"), "sha": "old", "folder": "y"], rules: rules)
        #expect(merged["content"] == asset("new", url: "file:///staged"))
        #expect(merged["sha"] == "new")
        #expect(merged["folder"] == "y")
        #expect(resolutions.isEmpty)
    }

    @Test func latestEditWinsByTimestampField() {
        let rules = MergeRules(defaultPolicy: .latestEdit(timestampField: "editedAt"))
        let (merged, _) = ThreeWayMerge.merge(
            ancestor: ["title": "a", "editedAt": .timestamp(1)], local: ["title": "old", "editedAt": .timestamp(5)],
            server: ["title": "new", "editedAt": .timestamp(9)], rules: rules)
        #expect(merged["title"] == "new")
        #expect(merged["editedAt"] == .timestamp(9))
    }

    @Test func latestEditTellsEditsWithinOneMillisecondApart() {
        let rules = MergeRules(defaultPolicy: .latestEdit(timestampField: "editedAt"))
        let base = Date(timeIntervalSince1970: 1_700_000_000.000_1)
        let earlier = FieldValue(date: base), later = FieldValue(date: base.addingTimeInterval(0.000_2))
        #expect(earlier.timestampValue == later.timestampValue, "the same whole millisecond")
        for (local, server, winner) in [(later, earlier, "old"), (earlier, later, "new")] {
            let (merged, _) = ThreeWayMerge.merge(
                ancestor: ["title": "a", "editedAt": .timestamp(1)], local: ["title": "old", "editedAt": local],
                server: ["title": "new", "editedAt": server], rules: rules)
            #expect(merged["title"] == .string(winner))
            #expect(merged["editedAt"] == later)
        }
    }

    @Test func unionKeepsAdditionsOfBothSidesAndRemovals() {
        func list(_ items: [String]) -> FieldValue { .list(elementType: .string, items.map(FieldValue.string)) }
        let rules = MergeRules(fields: ["tags": .union])
        let (merged, _) = ThreeWayMerge.merge(
            ancestor: ["tags": list(["a", "b"])], local: ["tags": list(["a", "c"])], server: ["tags": list(["a", "b", "d"])],
            rules: rules)
        #expect(merged["tags"] == list(["a", "d", "c"]))
    }

    @Test func countersAddBothIncrements() {
        let rules = MergeRules(fields: ["reads": .counter])
        let (merged, _) = ThreeWayMerge.merge(
            ancestor: ["reads": 10], local: ["reads": 12], server: ["reads": 15], rules: rules)
        #expect(merged["reads"] == 17)
    }

    @Test func fieldRemovedLocallyStaysRemovedWhenServerDidNotTouchIt() {
        let (merged, _) = ThreeWayMerge.merge(
            ancestor: ["a": 1, "b": 2], local: ["a": 1], server: ["a": 1, "b": 2, "c": 3], rules: MergeRules())
        #expect(merged == ["a": 1, "c": 3])
    }
}
