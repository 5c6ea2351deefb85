import Foundation

extension JSON {
    /// The compact JSON text of this value. Object members are written in sorted key order
    /// so that output is deterministic (useful for digests and for tests).
    package func serialized() -> String {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The compact JSON text of this value as bytes.
    package func serializedBytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(max(256, sizeEstimate(depth: 3)))
        write(into: &out)
        return out
    }

    /// A cheap lower estimate of the serialized size (pre-written texts dominate large
    /// answers), so the output buffer is allocated once.
    private func sizeEstimate(depth: Int) -> Int {
        switch self {
        case .raw(let text), .number(let text): return text.utf8.count
        case .rawUTF8(let bytes): return bytes.count
        case .string(let text): return text.utf8.count + 2
        case .null, .bool: return 5
        case .array(let elements):
            guard depth > 0 else { return 2 }
            return elements.reduce(2) { $0 + $1.sizeEstimate(depth: depth - 1) + 1 }
        case .object(let members):
            guard depth > 0 else { return 2 }
            return members.reduce(2) { $0 + $1.key.utf8.count + 4 + $1.value.sizeEstimate(depth: depth - 1) }
        }
    }

    /// Appends the compact JSON text of this value to `out`.
    package func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: Self.nullBytes)
        case .bool(let value): out.append(contentsOf: value ? Self.trueBytes : Self.falseBytes)
        case .number(let text): out.append(contentsOf: text.utf8)
        case .raw(let text): out.append(contentsOf: text.utf8)
        case .rawUTF8(let bytes): out.append(contentsOf: bytes)
        case .string(let value): Self.writeString(value, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { out.append(UInt8(ascii: ",")) }
                element.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            var first = true
            // Sort the members themselves (not the keys, then look each up again).
            for member in members.sorted(by: { $0.key < $1.key }) {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                Self.writeString(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static let nullBytes = Array("null".utf8)
    private static let trueBytes = Array("true".utf8)
    private static let falseBytes = Array("false".utf8)
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends a literal's bytes as they are (a writer's fixed punctuation and member names).
    package static func writeRaw(_ text: StaticString, into out: inout [UInt8]) {
        text.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    /// Appends `value` in decimal, as `String(value)` spells it, without making the string.
    package static func writeInteger(_ value: Int64, into out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        // 20 digits hold any UInt64 (Int64.min's magnitude has 19).
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    /// Appends `value` as a quoted, escaped JSON string.
    package static func writeString(_ value: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var value = value
        // Copy runs of bytes that need no escaping in one go.
        value.withUTF8 { bytes in
            var runStart = 0
            var position = JSONPlainBytes.end(of: bytes, from: 0, nonASCIIIsPlain: true)
            while position < bytes.count {
                if runStart < position {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<position]))
                }
                runStart = position + 1
                writeEscaped(bytes[position], into: &out)
                position = JSONPlainBytes.end(of: bytes, from: runStart, nonASCIIIsPlain: true)
            }
            if runStart < bytes.count {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func writeEscaped(_ byte: UInt8, into out: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "\\"))
        case 0x0A: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "n"))
        case 0x0D: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "r"))
        case 0x09: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "t"))
        default:
            out.append(contentsOf: unicodeEscapePrefix)
            out.append(hexDigits[Int(byte >> 4)])
            out.append(hexDigits[Int(byte & 0xF)])
        }
    }

    private static let unicodeEscapePrefix = Array("\\u00".utf8)
}
