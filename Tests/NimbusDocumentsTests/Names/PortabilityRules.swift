import Foundation
import NimbusProtocol

/// The platforms' rules for a file name, written out independently of the library, so the
/// tests check `PortableName` against the rules rather than against itself.
enum PortabilityRules {
    static let windowsForbidden: Set<Character> = ["\"", "*", ":", "<", ">", "?", "\\", "|", "/"]
    static let windowsDevices: Set<String> = {
        var names: Set<String> = ["CON", "PRN", "AUX", "NUL"]
        for suffix in ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "¹", "²", "³"] {
            names.insert("COM\(suffix)")
            names.insert("LPT\(suffix)")
        }
        return names
    }()

    /// Why `name` is no valid file name on Windows, macOS or Linux; `nil` if it is valid on all.
    static func violation(_ name: String) -> String? {
        if name.isEmpty { return "empty" }
        if name == "." || name == ".." { return "dot name" }
        for scalar in name.unicodeScalars where scalar.value < 0x20 { return "control \(scalar.value)" }
        for character in name where windowsForbidden.contains(character) { return "forbidden \(character)" }
        if name.hasSuffix(" ") || name.hasSuffix(".") { return "trailing space or period" }
        var stem = name.split(separator: ".", omittingEmptySubsequences: false).first.map(String.init) ?? name
        while stem.hasSuffix(" ") { stem.removeLast() }
        if windowsDevices.contains(stem.uppercased()) { return "device name \(stem)" }
        if name.decomposedStringWithCanonicalMapping.utf8.count > 255 { return "too long" }
        return nil
    }
}

/// A seeded generator for the property tests, so a failure names its seed.
typealias SeededGenerator = SplitMix64

/// Names built from the characters that make naming hard: cased letters of several scripts,
/// combining marks, characters Windows forbids, control characters, periods and spaces,
/// device names, and long runs.
enum HardNames {
    static let pieces: [String] = [
        "a", "A", "ß", "SS", "ss", "ẞ", "é", "e\u{301}", "É", "E\u{301}", "Σ", "σ", "ς", "İ", "i", "I", "ı",
        "K", "\u{212A}", "Å", "\u{212B}", "ǰ", "ﬁ", "Ω", "\u{2126}", "ω", "日本", "🙂", ".", " ", "..", ":", "\\",
        "/", "*", "?", "\"", "<", ">", "|", "\u{0}", "\u{7}", "\u{1F}", "\u{F022}", "CON", "con", "Lpt1", "COM²",
        "aux", ".txt", ".TXT", "x", "-", "_", "1", "2", " 2", "~",
    ]

    static func random(using generator: inout SeededGenerator) -> String {
        let count = Int.random(in: 1...6, using: &generator)
        var name = ""
        for _ in 0..<count { name += pieces.randomElement(using: &generator)! }
        if Int.random(in: 0..<20, using: &generator) == 0 {
            name += String(repeating: pieces.randomElement(using: &generator)!, count: Int.random(in: 60...200, using: &generator))
        }
        return name
    }
}
