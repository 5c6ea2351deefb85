import Foundation
import NimbusDocuments
import NimbusProtocol
import Testing

/// Children of one folder whose names collide get suffixes ordered by record name, so every
/// device, whatever order the records arrived in, writes the same files.
@Suite struct SiblingNamesTests {
    typealias Child = SiblingNames.Child

    @Test func theSmallestRecordNameKeepsTheName() {
        let names = SiblingNames.assign([
            Child(recordName: "b", name: "Notes.txt"),
            Child(recordName: "a", name: "notes.TXT"),
            Child(recordName: "c", name: "NOTES.txt"),
        ])
        #expect(names == ["a": "notes.TXT", "b": "Notes 2.txt", "c": "NOTES 3.txt"])
    }

    @Test func unicodeCollisionsAreSuffixedToo() {
        let names = SiblingNames.assign([
            Child(recordName: "r1", name: "Straße.md"),
            Child(recordName: "r2", name: "STRASSE.md"),
            Child(recordName: "r3", name: "cafe\u{301}"),
            Child(recordName: "r4", name: "CAFÉ"),
        ])
        #expect(names["r1"] == "Straße.md")
        #expect(names["r2"] == "STRASSE 2.md")
        #expect(names["r3"] == "café")
        #expect(names["r4"] == "CAFÉ 2")
    }

    /// A name that two invalid names map to, and the name a suffix would produce, are told
    /// apart too: a suffix never takes a name another child holds.
    @Test func mappedNamesAndSuffixesNeverCollide() {
        let names = SiblingNames.assign([
            Child(recordName: "a", name: "a:b"),
            Child(recordName: "b", name: "a/b"),
            Child(recordName: "c", name: "a\u{F022}b 2"),
            Child(recordName: "d", name: "x"),
            Child(recordName: "e", name: "X"),
            Child(recordName: "f", name: "x 2"),
        ])
        #expect(names["a"] == "a\u{F022}b")
        #expect(names["c"] == "a\u{F022}b 2")
        #expect(names["b"] == "a\u{F022}b 3")
        #expect(names["d"] == "x")
        #expect(names["f"] == "x 2")
        #expect(names["e"] == "X 3")
    }

    /// On folders from a seeded generator: every child gets a valid local name, no two
    /// collide, a child whose name is portable and unique keeps it, and the order of the
    /// children does not matter.
    @Test func randomFoldersAreDeterministicAndCollisionFree() {
        let seed = UInt64(2_026)
        var generator = SeededGenerator(seed: seed)
        for round in 0..<300 {
            let count = Int.random(in: 1...25, using: &generator)
            var children: [Child] = []
            for index in 0..<count {
                // Few distinct names, so collisions are common.
                let name = Int.random(in: 0..<3, using: &generator) == 0
                    ? HardNames.random(using: &generator)
                    : ["Plan.txt", "plan.TXT", "PLAN.txt", "Plan 2.txt", "a:b", "a/b", "CON", "con", "ß", "SS"]
                        .randomElement(using: &generator)!
                children.append(Child(recordName: "rec-\(index)-\(UInt8.random(in: 0...255, using: &generator))", name: name))
            }
            let names = SiblingNames.assign(children)
            let context = "seed \(seed), round \(round): \(children)"
            #expect(names.count == children.count, "\(context)")
            let keys = names.values.map(NameKey.init)
            #expect(Set(keys).count == keys.count, "\(context)")
            for local in names.values { #expect(PortabilityRules.violation(local) == nil, "\(context): \(local.debugDescription)") }
            for child in children where PortabilityRules.violation(child.name) == nil {
                let others = children.filter { $0.recordName != child.recordName }
                if !others.contains(where: { NameKey(PortableName.localName(for: $0.name)) == NameKey(child.name) }) {
                    #expect(names[child.recordName] == child.name.precomposedStringWithCanonicalMapping, "\(context)")
                }
            }
            var shuffled = children
            shuffled.shuffle(using: &generator)
            #expect(SiblingNames.assign(shuffled) == names, "\(context)")
        }
    }
}
