/// Writes an 8-bit palette PNG with nothing but the standard library: each row filtered with
/// PNG's "Up" filter (a row equal to the one above becomes zeros), then deflated with the
/// fixed Huffman codes and back-references of distance 1 (runs), which is all a chart of
/// flat colours needs to shrink well.
///
/// ```swift
/// let png = PNGEncoder.encode(width: 2, height: 1, pixels: [0, 1], palette: [(255, 255, 255), (0, 0, 0)])
/// ```
enum PNGEncoder {
    static func encode(width: Int, height: Int, pixels: [UInt8], palette: [(UInt8, UInt8, UInt8)]) -> [UInt8] {
        precondition(pixels.count == width * height && !palette.isEmpty && palette.count <= 256)
        var filtered: [UInt8] = []
        filtered.reserveCapacity((width + 1) * height)
        for row in 0..<height {
            let start = row * width
            if row == 0 {
                filtered.append(0)  // None
                filtered.append(contentsOf: pixels[start..<(start + width)])
            } else {
                filtered.append(2)  // Up
                for column in 0..<width { filtered.append(pixels[start + column] &- pixels[start - width + column]) }
            }
        }
        var header: [UInt8] = []
        append32(UInt32(width), to: &header)
        append32(UInt32(height), to: &header)
        header += [8, 3, 0, 0, 0]  // 8 bits, palette, deflate, adaptive filters, no interlace
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        chunk("IHDR", header, into: &out)
        chunk("PLTE", palette.flatMap { [$0.0, $0.1, $0.2] }, into: &out)
        chunk("IDAT", zlib(filtered), into: &out)
        chunk("IEND", [], into: &out)
        return out
    }

    /// A zlib stream: header, one fixed-Huffman deflate block, Adler-32.
    static func zlib(_ data: [UInt8]) -> [UInt8] {
        var bits = BitWriter()
        bits.write(1, count: 1)  // BFINAL
        bits.write(1, count: 2)  // BTYPE 01: fixed Huffman codes
        var index = 0
        while index < data.count {
            var run = 0
            if index > 0 {
                let previous = data[index - 1]
                while run < 258, index + run < data.count, data[index + run] == previous { run += 1 }
            }
            if run >= 3 {
                writeLength(run, to: &bits)
                bits.write(0, count: 5)  // distance code 0: distance 1 (fixed 5-bit code, reversed: all zeros)
                index += run
            } else {
                writeSymbol(Int(data[index]), to: &bits)
                index += 1
            }
        }
        writeSymbol(256, to: &bits)  // end of block
        var out: [UInt8] = [0x78, 0x01]
        out += bits.finish()
        append32(adler32(data), to: &out)
        return out
    }

    private static let lengthBases = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    private static let lengthExtraBits = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]

    private static func writeLength(_ length: Int, to bits: inout BitWriter) {
        var code = lengthBases.count - 1
        while lengthBases[code] > length { code -= 1 }
        writeSymbol(257 + code, to: &bits)
        if lengthExtraBits[code] > 0 { bits.write(UInt32(length - lengthBases[code]), count: lengthExtraBits[code]) }
    }

    /// A literal/length symbol in deflate's fixed Huffman code (RFC 1951 3.2.6), most
    /// significant bit first.
    private static func writeSymbol(_ symbol: Int, to bits: inout BitWriter) {
        let (code, count): (Int, Int)
        switch symbol {
        case 0...143: (code, count) = (0x30 + symbol, 8)
        case 144...255: (code, count) = (0x190 + symbol - 144, 9)
        case 256...279: (code, count) = (symbol - 256, 7)
        default: (code, count) = (0xC0 + symbol - 280, 8)
        }
        for shift in stride(from: count - 1, through: 0, by: -1) { bits.write(UInt32((code >> shift) & 1), count: 1) }
    }

    private static func chunk(_ type: String, _ data: [UInt8], into out: inout [UInt8]) {
        append32(UInt32(data.count), to: &out)
        let typed = Array(type.utf8) + data
        out += typed
        append32(crc32(typed), to: &out)
    }

    private static func append32(_ value: UInt32, to out: inout [UInt8]) {
        out += [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    private static let crcTable: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }

    static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        return b << 16 | a
    }

    /// Deflate's bit order: values least significant bit first, bytes filled from bit 0.
    private struct BitWriter {
        var bytes: [UInt8] = []
        var current: UInt32 = 0
        var used = 0

        mutating func write(_ value: UInt32, count: Int) {
            for bit in 0..<count {
                current |= ((value >> UInt32(bit)) & 1) << UInt32(used)
                used += 1
                if used == 8 {
                    bytes.append(UInt8(current))
                    current = 0
                    used = 0
                }
            }
        }

        mutating func finish() -> [UInt8] {
            if used > 0 { bytes.append(UInt8(current)) }
            return bytes
        }
    }
}
