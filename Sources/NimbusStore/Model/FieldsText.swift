#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Byte searches in records' JSON text: they decide whether fields are parsed at all, on every
/// record a write touches and every record an answer renders. `String.contains` searches with
/// the standard library's generic substring searcher (and, with Foundation, may bridge through
/// `NSString`): in the writer of a batched modify it took a third of the transaction
/// (docs/PERFORMANCE.md). The server's checks of change-feed pages and reserved fields use it too.
package enum FieldsText {
    /// Whether `text`'s UTF-8 contains `marker` (not empty).
    package static func contains(_ marker: [UInt8], in text: String) -> Bool {
        var text = text
        return text.withUTF8 { contains(marker, in: $0) }
    }

    /// Whether `bytes` contain `marker` (not empty).
    package static func contains(_ marker: [UInt8], in bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { contains(marker, in: $0) }
    }

    private static func contains(_ marker: [UInt8], in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !marker.isEmpty, bytes.count >= marker.count, let base = bytes.baseAddress else { return false }
        // The C library's `memchr` finds one byte of the marker a vector at a time and
        // `memcmp` checks the whole marker there: the byte loop this replaced was a tenth of
        // a 200-record write (nimbus-bench store-write). The byte searched for is one that is
        // rare in JSON (not a quote, a lowercase letter or punctuation), so `memchr` does not
        // stop at every field.
        let anchor = marker.firstIndex { !commonInJSON($0) } ?? 0
        let anchorByte = CInt(marker[anchor])
        return marker.withUnsafeBytes { needle in
            guard let needleBase = needle.baseAddress else { return false }
            let last = bytes.count - needle.count  // the last offset the marker can start at
            var start = 0
            while start <= last {
                guard let found = memchr(base + start + anchor, anchorByte, last - start + 1) else { return false }
                start = UnsafeRawPointer(found).assumingMemoryBound(to: UInt8.self) - base - anchor
                if memcmp(base + start, needleBase, needle.count) == 0 { return true }
                start += 1
            }
            return false
        }
    }

    private static func commonInJSON(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "\""), UInt8(ascii: ":"), UInt8(ascii: ","),
            UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: " "):
            return true
        default:
            return false
        }
    }
}
