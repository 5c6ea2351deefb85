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
        guard let first = marker.first, bytes.count >= marker.count else { return false }
        let last = bytes.count - marker.count
        var position = 0
        while position <= last {
            if bytes[position] == first {
                var matched = 1
                while matched < marker.count && bytes[position + matched] == marker[matched] { matched += 1 }
                if matched == marker.count { return true }
            }
            position += 1
        }
        return false
    }
}
