/// Crockford's base32: what people read aloud and type (no I, L, O or U; case and dashes
/// do not matter; O reads as 0, I and L as 1).
enum Base32 {
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

    static func encode(_ bytes: [UInt8]) -> String {
        var output = ""
        var buffer = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | Int(byte)
            bits += 8
            while bits >= 5 {
                output.append(alphabet[(buffer >> (bits - 5)) & 31])
                bits -= 5
            }
            buffer &= (1 << bits) - 1
        }
        if bits > 0 { output.append(alphabet[(buffer << (5 - bits)) & 31]) }
        return output
    }

    /// `text` as the alphabet spells it: upper case, without dashes and spaces, O as 0 and
    /// I and L as 1; `nil` for a character not in the alphabet.
    static func normalized(_ text: String) -> String? {
        var output = ""
        for character in text.uppercased() where character != "-" && character != " " {
            let mapped: Character =
                switch character {
                case "O": "0"
                case "I", "L": "1"
                default: character
                }
            guard alphabet.contains(mapped) else { return nil }
            output.append(mapped)
        }
        return output
    }

    /// The bytes of `text` (`byteCount` of them), or `nil` for a character not in the alphabet.
    static func decode(_ text: String, byteCount: Int) -> [UInt8]? {
        guard let text = normalized(text) else { return nil }
        var output: [UInt8] = []
        var buffer = 0
        var bits = 0
        for character in text {
            guard let value = alphabet.firstIndex(of: character) else { return nil }
            buffer = buffer << 5 | value
            bits += 5
            if bits >= 8 {
                output.append(UInt8((buffer >> (bits - 8)) & 0xFF))
                bits -= 8
                buffer &= (1 << bits) - 1
            }
        }
        return output.count == byteCount ? output : nil
    }

    /// `text` in groups of four, joined by dashes.
    static func grouped(_ text: String) -> String {
        stride(from: 0, to: text.count, by: 4).map { start in
            String(text.dropFirst(start).prefix(4))
        }.joined(separator: "-")
    }
}
