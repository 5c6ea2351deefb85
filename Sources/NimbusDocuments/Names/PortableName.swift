import Crypto
import Foundation

/// A name made valid on Windows, macOS and Linux at once, deterministically: what a document's
/// true name (kept in its record) becomes on disk.
///
/// A name that is already valid everywhere stays as it is (in NFC). Otherwise:
///
/// | problem | local name |
/// |---|---|
/// | a control character U+0000–U+001F | U+F000–U+F01F |
/// | `"` `*` `:` `<` `>` `?` `\` `|` | U+F020, U+F021, U+F022, U+F023, U+F024, U+F025, U+F026, U+F027 |
/// | `/` | U+F022 (a Mac shows `:` in a POSIX name as `/`) |
/// | a space or a period as the last character | U+F028 or U+F029 |
/// | `.` and `..` | `\u{F029}` and `.\u{F029}` |
/// | a Windows device name (`CON`, `PRN`, `AUX`, `NUL`, `COM0`–`COM9`, `LPT0`–`LPT9`, `COM¹²³`, `LPT¹²³`), alone or before an extension, any case | `_` after the device name: `CON_.txt` |
/// | longer than 255 bytes of UTF-8 in NFD | cut on a character boundary, `~` and 8 hex digits of the true name's SHA-256 added before the extension |
/// | empty | `_` |
///
/// The characters' private-use code points are those of Services for Macintosh (SFM), which
/// Windows file servers and Linux's SMB client (`mapposix`) use for the same purpose, so a
/// name shows its original characters over SMB. Two true names that end up with the same
/// local name (or names that collide, see ``NameKey``) are told apart by ``SiblingNames``.
public enum PortableName {
    /// The longest name, in bytes of UTF-8 of its NFD form: at most 255 bytes on ext4 and
    /// APFS and at most 255 UTF-16 units on NTFS and HFS+ (which stores NFD).
    public static let maximumBytes = 255

    /// `name` made valid on every platform.
    public static func localName(for name: String) -> String {
        let nfc = name.precomposedStringWithCanonicalMapping
        if nfc.isEmpty { return "_" }
        if nfc == "." { return "\u{F029}" }
        if nfc == ".." { return ".\u{F029}" }
        var scalars = String.UnicodeScalarView()
        for scalar in nfc.unicodeScalars { scalars.append(mapped(scalar)) }
        if let last = scalars.last, last == " " || last == "." {
            scalars.removeLast()
            scalars.append(last == " " ? "\u{F028}" : "\u{F029}")
        }
        var result = String(scalars)
        result = avoidingDeviceName(result)
        return fitted(result, trueName: name)
    }

    /// Whether `name` is valid on every platform as it is (``localName(for:)`` keeps it).
    public static func isPortable(_ name: String) -> Bool {
        localName(for: name) == name
    }

    /// The problems `name` has as a file name somewhere, for messages; empty if portable.
    public static func problems(_ name: String) -> [String] {
        var problems: [String] = []
        if name.isEmpty { problems.append("is empty") }
        if name == "." || name == ".." { problems.append("is a path component") }
        if name.unicodeScalars.contains(where: { replacements[$0] != nil || $0.value < 0x20 }) {
            problems.append("has a character Windows does not allow (control, \" * : < > ? \\ |) or /")
        }
        if let last = name.last, last == " " || last == "." { problems.append("ends with a space or a period") }
        if deviceName(in: name) != nil { problems.append("is a Windows device name") }
        if decomposedBytes(name) > maximumBytes { problems.append("is longer than \(maximumBytes) bytes") }
        return problems
    }

    // MARK: - The rules

    static let replacements: [Unicode.Scalar: Unicode.Scalar] = [
        "\"": "\u{F020}", "*": "\u{F021}", ":": "\u{F022}", "<": "\u{F023}", ">": "\u{F024}",
        "?": "\u{F025}", "\\": "\u{F026}", "|": "\u{F027}", "/": "\u{F022}",
    ]

    static func mapped(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
        if scalar.value < 0x20 { return Unicode.Scalar(0xF000 + scalar.value)! }
        return replacements[scalar] ?? scalar
    }

    static let deviceNames: Set<String> = {
        var names: Set<String> = ["CON", "PRN", "AUX", "NUL"]
        for digit in ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "¹", "²", "³"] {
            names.insert("COM" + digit)
            names.insert("LPT" + digit)
        }
        return names
    }()

    /// The device name `name` starts with, if Windows reads it as one: the part before the
    /// first period, trailing spaces ignored, in any case.
    static func deviceName(in name: String) -> Substring? {
        let stem = name.prefix { $0 != "." }
        var trimmed = stem
        while trimmed.last == " " { trimmed = trimmed.dropLast() }
        return deviceNames.contains(trimmed.uppercased()) ? trimmed : nil
    }

    static func avoidingDeviceName(_ name: String) -> String {
        guard let device = deviceName(in: name) else { return name }
        return String(name[..<device.endIndex]) + "_" + String(name[device.endIndex...])
    }

    static func decomposedBytes(_ name: String) -> Int {
        name.decomposedStringWithCanonicalMapping.utf8.count
    }

    /// `name` within ``maximumBytes``: the stem cut on a character boundary, with a tag of
    /// the true name's hash so two long names sharing a prefix stay apart.
    static func fitted(_ name: String, trueName: String) -> String {
        guard decomposedBytes(name) > maximumBytes else { return name }
        let digest = SHA256.hash(data: Data(trueName.precomposedStringWithCanonicalMapping.utf8))
        let tag = "~" + digest.prefix(4).map { String(format: "%02x", $0) }.joined()
        var (stem, ext) = NameParts.split(name)
        // An extension so long that it leaves no room is part of the stem.
        if decomposedBytes(ext) > maximumBytes / 4 {
            stem += ext
            ext = ""
        }
        let budget = maximumBytes - decomposedBytes(tag + ext)
        var kept = ""
        var used = 0
        for character in stem {
            let size = decomposedBytes(String(character))
            if used + size > budget { break }
            kept.append(character)
            used += size
        }
        return kept + tag + ext
    }
}
