/// Finds where a run of a JSON string's bytes that need no attention ends, eight bytes at a
/// time: the reader and the writer look at every byte of every string (a first sync reads and
/// writes hundreds of millions), and a byte loop was their largest cost.
package enum JSONPlainBytes {
    /// The offset of the first byte at or after `start` that is a quote, a backslash, a
    /// control character (below 0x20) or, unless `nonASCIIIsPlain`, a byte of 0x80 or above;
    /// `bytes.count` when there is none.
    package static func end(of bytes: UnsafeBufferPointer<UInt8>, from start: Int, nonASCIIIsPlain: Bool) -> Int {
        guard let base = bytes.baseAddress else { return start }
        var position = start
        let highBits: UInt64 = nonASCIIIsPlain ? 0 : 0x8080_8080_8080_8080
        while position + 8 <= bytes.count {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + position).loadUnaligned(as: UInt64.self))
            // Each test is exact about whether some byte of the word matches (a byte's
            // position may be off after a borrow, so the bytes are then looked at one by one).
            let special = hasZeroByte(word ^ 0x2222_2222_2222_2222)  // "
                | hasZeroByte(word ^ 0x5C5C_5C5C_5C5C_5C5C)  // \
                | hasByteBelow0x20(word) | (word & highBits)
            if special != 0 { break }
            position += 8
        }
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 || (byte >= 0x80 && !nonASCIIIsPlain) {
                return position
            }
            position += 1
        }
        return position
    }

    /// Non-zero when some byte of `word` is zero.
    @inline(__always)
    private static func hasZeroByte(_ word: UInt64) -> UInt64 {
        (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080
    }

    /// Non-zero when some byte of `word` is below 0x20.
    @inline(__always)
    private static func hasByteBelow0x20(_ word: UInt64) -> UInt64 {
        (word &- 0x2020_2020_2020_2020) & ~word & 0x8080_8080_8080_8080
    }
}
