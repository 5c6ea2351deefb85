import Foundation
import NimbusDocuments
import NimbusProtocol
import Testing

/// Names invalid on Windows, macOS or Linux become valid local names, deterministically, and
/// names already valid everywhere are kept.
@Suite struct PortableNameTests {
    @Test(arguments: [
        "Plan.txt", "notes", ".profile", "Read Me", "日本語のファイル.md", "café", "a.b.c", "~draft", "CONSOLE.txt",
        "COM10", "LPT", "nul1", "x.CON", "AUX-file", "#1 (copy)", "100% done", "a;b,c=d&e'f", "Ω", "🙂.png",
    ])
    func validNamesAreKept(_ name: String) {
        #expect(PortabilityRules.violation(name) == nil, "the rules say \(name) is valid")
        #expect(PortableName.localName(for: name) == name.precomposedStringWithCanonicalMapping)
        #expect(PortableName.isPortable(name))
        #expect(PortableName.problems(name).isEmpty)
    }

    @Test(arguments: [
        ("a:b", "a\u{F022}b"),
        ("a/b", "a\u{F022}b"),
        ("what?", "what\u{F025}"),
        ("\"quoted\"", "\u{F020}quoted\u{F020}"),
        ("x*y<z>|w\\v", "x\u{F021}y\u{F023}z\u{F024}\u{F027}w\u{F026}v"),
        ("tab\there", "tab\u{F009}here"),
        ("nul\u{0}", "nul\u{F000}"),
        ("end.", "end\u{F029}"),
        ("end ", "end\u{F028}"),
        ("end. .", "end. \u{F029}"),
        (".", "\u{F029}"),
        ("..", ".\u{F029}"),
        ("", "_"),
        ("CON", "CON_"),
        ("con.txt", "con_.txt"),
        ("Aux.tar.gz", "Aux_.tar.gz"),
        ("LPT1", "LPT1_"),
        ("com²", "com²_"),
        ("NUL .txt", "NUL_ .txt"),
        ("PRN.", "PRN\u{F029}"),
    ])
    func invalidNamesAreMapped(_ name: String, _ local: String) {
        #expect(PortabilityRules.violation(name) != nil, "the rules say \(name.debugDescription) is invalid")
        #expect(PortableName.localName(for: name) == local, "\(name.debugDescription)")
        #expect(PortabilityRules.violation(local) == nil, "\(local.debugDescription) is valid")
        #expect(!PortableName.problems(name).isEmpty)
    }

    /// Every ASCII character alone, and between two letters: the local name is valid, and
    /// the character is kept exactly when it is valid there.
    @Test func everyASCIICharacter() {
        for value in 0...0x7F {
            let character = String(UnicodeScalar(UInt8(value)))
            for name in [character, "a" + character + "b"] {
                let local = PortableName.localName(for: name)
                #expect(PortabilityRules.violation(local) == nil, "\(name.debugDescription) → \(local.debugDescription)")
                #expect((local == name) == (PortabilityRules.violation(name) == nil), "\(name.debugDescription)")
            }
        }
    }

    /// Every device name, in upper and lower case, alone and before an extension, is changed;
    /// the same letters with a longer stem are not.
    @Test func everyDeviceName() {
        for device in PortabilityRules.windowsDevices {
            for name in [device, device.lowercased(), device + ".txt", device.lowercased() + ".tar.gz", device + "  .md"] {
                let local = PortableName.localName(for: name)
                #expect(local != name, "\(name)")
                #expect(PortabilityRules.violation(local) == nil, "\(name) → \(local)")
            }
            #expect(PortableName.localName(for: device + "X.txt") == device + "X.txt")
        }
    }

    @Test func longNamesAreCutWithTheirExtensionAndATag() throws {
        let long = String(repeating: "é", count: 200) + ".pdf"
        let local = PortableName.localName(for: long)
        #expect(local.decomposedStringWithCanonicalMapping.utf8.count <= 255)
        #expect(local.hasSuffix(".pdf"))
        #expect(local.hasPrefix("éééé"))
        #expect(local.contains("~"))
        // Two long names that share their first 255 bytes stay apart.
        let other = String(repeating: "é", count: 200) + "x.pdf"
        #expect(PortableName.localName(for: other) != local)
        // Emoji and combining marks are never cut in the middle.
        let emoji = String(repeating: "👩‍👩‍👧", count: 60)
        let cut = PortableName.localName(for: emoji)
        #expect(cut.decomposedStringWithCanonicalMapping.utf8.count <= 255)
        #expect(cut.dropLast(9).allSatisfy { $0 == "👩‍👩‍👧" })
        // Exactly at the limit is kept.
        let limit = String(repeating: "a", count: 251) + ".txt"
        #expect(PortableName.localName(for: limit) == limit)
        #expect(PortableName.localName(for: limit + "x") != limit + "x")
    }

    /// On names from a seeded generator: the local name is always valid, mapping is
    /// deterministic and idempotent, and NFC and NFD spellings map alike.
    @Test func randomNamesAlwaysMapToValidNames() {
        let seed = UInt64(39)
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<3_000 {
            let name = HardNames.random(using: &generator)
            let local = PortableName.localName(for: name)
            #expect(PortabilityRules.violation(local) == nil, "seed \(seed): \(name.debugDescription) → \(local.debugDescription)")
            #expect(PortableName.localName(for: local) == local, "seed \(seed): \(name.debugDescription)")
            #expect(PortableName.localName(for: name) == local)
            #expect(PortableName.localName(for: name.decomposedStringWithCanonicalMapping) == local, "seed \(seed)")
        }
    }

    @Test(arguments: [
        ("a.tar.gz", "a.tar", ".gz"), (".profile", ".profile", ""), ("Makefile", "Makefile", ""),
        ("v1.0 final", "v1.0 final", ""), ("trailing.", "trailing.", ""), ("Plan.txt", "Plan", ".txt"),
    ])
    func namesSplitLikeTheFinder(_ name: String, _ stem: String, _ ext: String) {
        let parts = NameParts.split(name)
        #expect(parts.stem == stem && parts.ext == ext)
    }

    @Test func suffixesGoBeforeTheExtension() {
        #expect(NameParts.adding(" 2", to: "Report.pdf") == "Report 2.pdf")
        #expect(NameParts.adding(" 2", to: "Report") == "Report 2")
    }
}
