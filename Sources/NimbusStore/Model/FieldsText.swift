/// Byte searches in a record's fields JSON: they decide whether the fields are parsed at all,
/// on every record a write touches. `String.contains` searches with the standard library's
/// generic substring searcher (and, with Foundation, may bridge through `NSString`): in the
/// writer of a batched modify it took a third of the transaction (docs/PERFORMANCE.md).
enum FieldsText {
    /// Whether `text`'s UTF-8 contains `marker` (not empty).
    static func contains(_ marker: [UInt8], in text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
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
}
