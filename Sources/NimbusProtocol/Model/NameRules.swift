import Foundation

/// The rules for the names a request brings (see docs/API.md, "Names and values").
///
/// Two kinds of names:
/// - **Names** — record names, zone names, subscription IDs: 1 to 255 bytes of UTF-8, no
///   control characters, in Unicode Normalization Form C. The databases compare names byte
///   for byte while Swift's `String ==` compares them by canonical equivalence; with only
///   NFC names accepted the two agree (two distinct NFC strings are never canonically
///   equivalent), so one name is one record everywhere: in the store, the server and the SDK.
/// - **Identifiers** — record types and field names: an ASCII letter or `_`, then ASCII
///   letters, digits and `_`, at most 255 characters, as CloudKit's schema spells them.
public enum NameRules {
    /// The most bytes a name may have.
    public static let maxLength = 255

    /// Checks a record name, zone name or subscription ID, naming `path` and the rule broken.
    public static func checkName(_ name: String, at path: String) throws(CloudKitError) {
        guard !name.isEmpty else { throw .badRequest("'\(path)' must not be empty") }
        let length = name.utf8.count
        guard length <= maxLength else {
            throw .badRequest("'\(path)' is \(length) bytes; a name is at most \(maxLength) bytes of UTF-8")
        }
        var ascii = true
        for scalar in name.unicodeScalars {
            if isControl(scalar) {
                throw .badRequest(
                    "'\(path)' contains the control character \(codePoint(scalar)); "
                        + "names may not contain control characters (U+0000–U+001F, U+007F–U+009F)")
            }
            if !scalar.isASCII { ascii = false }
        }
        guard ascii || isNFC(name) else {
            throw .badRequest(
                "'\(path)' is not in Unicode Normalization Form C: names are compared byte for byte, "
                    + "so send them NFC-normalized (precomposedStringWithCanonicalMapping)")
        }
    }

    /// Checks a record type or field name (`what` says which, for the reason).
    public static func checkIdentifier(_ name: String, at path: String, what: String) throws(CloudKitError) {
        guard !name.isEmpty else { throw .badRequest("'\(path)': a \(what) must not be empty") }
        guard name.utf8.count <= maxLength else {
            throw .badRequest("'\(path)': a \(what) is at most \(maxLength) characters")
        }
        guard isIdentifier(name) else {
            throw .badRequest(
                "'\(path)': \(what) '\(printable(name))' must start with an ASCII letter or '_' and contain only "
                    + "ASCII letters, digits and '_'")
        }
    }

    /// An ASCII letter or `_`, then ASCII letters, digits and `_`.
    public static func isIdentifier(_ name: String) -> Bool {
        var first = true
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "_"): break
            case UInt8(ascii: "0")...UInt8(ascii: "9") where !first: break
            default: return false
            }
            first = false
        }
        return !first
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    static func isNFC(_ name: String) -> Bool {
        name.precomposedStringWithCanonicalMapping.utf8.elementsEqual(name.utf8)
    }

    static func codePoint(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }

    /// The name with control characters spelled as code points, for a reason.
    static func printable(_ name: String) -> String {
        var text = ""
        for scalar in name.unicodeScalars.prefix(64) {
            if isControl(scalar) { text += codePoint(scalar) } else { text.unicodeScalars.append(scalar) }
        }
        return text
    }
}
