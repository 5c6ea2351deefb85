import Foundation

/// What a case-insensitive, normalisation-insensitive file system compares when it decides two
/// names are the same file: the name in Unicode NFC after full case folding.
///
/// Two names collide when their keys are equal: `"Read Me.txt"` and `"read me.TXT"`,
/// `"Straße"` and `"STRASSE"`, `"café"` written precomposed and with a combining accent,
/// `"ΣΊΣΥΦΟΣ"` and `"σίσυφος"`. The key folds a little more than some file systems do
/// (every name that collides on APFS, HFS+ or NTFS collides here), so a name kept apart on
/// every device is never merged by one of them.
///
/// ```swift
/// NameKey("Straße") == NameKey("STRASSE")   // true
/// ```
public struct NameKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The folded name.
    public let folded: String

    public init(_ name: String) {
        // Lowercasing, uppercasing, then lowercasing again is full case folding for every
        // cased letter: "ẞ" → "ß" → "SS" → "ss", "ſ" → "S" → "s", final "ς" → "Σ" → "σ",
        // the Kelvin sign → "k". The mappings are the standard library's full (SpecialCasing)
        // ones, locale-independent and the same on every platform. NFC last, so canonically
        // equivalent spellings give one key.
        folded = name.lowercased().uppercased().lowercased().precomposedStringWithCanonicalMapping
    }

    public static func < (lhs: NameKey, rhs: NameKey) -> Bool {
        lhs.folded.unicodeScalars.lexicographicallyPrecedes(rhs.folded.unicodeScalars)
    }

    public var description: String { folded }
}
