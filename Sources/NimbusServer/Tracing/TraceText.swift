import W3CTraceContext

/// Trace and span IDs as text, written straight into the string's storage: the library's
/// `description` and `traceParentHeaderValue` go through arrays and interpolation, and a
/// traced request writes five of them.
enum TraceText {
    /// 32 lowercase hex digits.
    static func hex(_ id: TraceID) -> String { withUnsafeBytes(of: id.bytes) { hex($0) } }

    /// 16 lowercase hex digits.
    static func hex(_ id: SpanID) -> String { withUnsafeBytes(of: id.bytes) { hex($0) } }

    /// `00-<trace ID>-<span ID>-<flags>`, the W3C `traceparent` that names `spanID` as the parent.
    static func traceParent(_ traceID: TraceID, _ spanID: SpanID, flags: TraceFlags) -> String {
        withUnsafeBytes(of: traceID.bytes) { trace in
            withUnsafeBytes(of: spanID.bytes) { span in
                String(unsafeUninitializedCapacity: 55) { out in
                    out[0] = UInt8(ascii: "0")
                    out[1] = UInt8(ascii: "0")
                    out[2] = UInt8(ascii: "-")
                    write(trace, into: out, at: 3)
                    out[35] = UInt8(ascii: "-")
                    write(span, into: out, at: 36)
                    out[52] = UInt8(ascii: "-")
                    out[53] = digits[Int(flags.rawValue >> 4)]
                    out[54] = digits[Int(flags.rawValue & 0xF)]
                    return 55
                }
            }
        }
    }

    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    private static func hex(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            write(bytes, into: out, at: 0)
            return bytes.count * 2
        }
    }

    private static func write(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableBufferPointer<UInt8>, at start: Int) {
        for (index, byte) in bytes.enumerated() {
            out[start + 2 * index] = digits[Int(byte >> 4)]
            out[start + 2 * index + 1] = digits[Int(byte & 0xF)]
        }
    }
}
