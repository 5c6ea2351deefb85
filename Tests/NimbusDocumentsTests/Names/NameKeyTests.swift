import Foundation
import NimbusDocuments
import NimbusProtocol
import Testing

/// Collisions are decided as a case-insensitive, normalisation-insensitive file system decides
/// them: Unicode case folding and NFC, not ASCII only.
@Suite struct NameKeyTests {
    @Test(arguments: [
        ("Read Me.txt", "read me.TXT"),
        ("Straße", "STRASSE"),
        ("straße", "strasse"),
        ("ẞ", "ss"),
        ("café", "cafe\u{301}"),
        ("CAFÉ", "cafe\u{301}"),
        ("ΣΊΣΥΦΟΣ", "σίσυφος"),
        ("ΣΊΣΥΦΟΣ", "σίσυφοσ"),
        ("\u{212A}elvin", "kelvin"),
        ("\u{212B}ngström", "ångström"),
        ("\u{2126}", "ω"),
        ("ǰ", "J\u{30C}"),
        ("ſ", "s"),
        ("Ǆ", "ǆ"),
        ("ǅ", "ǆ"),
        ("ÆØÅ", "æøå"),
        ("ДОКУМЕНТ", "документ"),
        ("ＡＢＣ", "ａｂｃ"),
        ("ﬁle", "FILE"),
    ])
    func collide(_ first: String, _ second: String) {
        #expect(NameKey(first) == NameKey(second), "\(first) and \(second)")
        #expect(NameKey(first).hashValue == NameKey(second).hashValue)
    }

    @Test(arguments: [
        ("a", "b"),
        ("résumé", "resume"),
        ("日本", "日木"),
        ("ABC", "ＡＢＣ"),
        ("file.txt", "file.txt "),
    ])
    func stayApart(_ first: String, _ second: String) {
        #expect(NameKey(first) != NameKey(second), "\(first) and \(second)")
    }

    /// The key folds a little more than a file system: the Turkish dotless ı meets i (case
    /// folding keeps them apart). Two such names get a suffix on every device; nothing merges.
    @Test func foldsDotlessIWithI() {
        #expect(NameKey("ı") == NameKey("I"))
        #expect(NameKey("İ") != NameKey("I"))
    }

    @Test func theKeyIsInNFCAndStable() {
        let key = NameKey("E\u{301}COLE")
        #expect(key.folded.unicodeScalars.map(\.value) == Array("école".precomposedStringWithCanonicalMapping.unicodeScalars).map(\.value))
        #expect(NameKey(key.folded) == key)
    }

    /// Every pair of ASCII letters collides exactly when the letters are the same but for case.
    @Test func everyASCIIPairCollidesOnlyCaseInsensitively() {
        let printable = (0x20...0x7E).map { String(UnicodeScalar($0)!) }
        for first in printable {
            for second in printable {
                #expect((NameKey(first) == NameKey(second)) == (first.lowercased() == second.lowercased()), "\(first) \(second)")
            }
        }
    }

    /// Folding is idempotent and insensitive to case changes and normalisation, on names from
    /// a seeded generator (the seed is in any failure's message).
    @Test func foldingIsIdempotentAndCaseBlind() {
        let seed = UInt64(20_261_127)
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<2_000 {
            let name = HardNames.random(using: &generator)
            let key = NameKey(name)
            #expect(NameKey(key.folded) == key, "seed \(seed): \(name.debugDescription)")
            #expect(NameKey(name.uppercased()) == key, "seed \(seed): \(name.debugDescription)")
            #expect(NameKey(name.lowercased()) == key, "seed \(seed): \(name.debugDescription)")
            #expect(NameKey(name.decomposedStringWithCanonicalMapping) == key, "seed \(seed): \(name.debugDescription)")
        }
    }
}
