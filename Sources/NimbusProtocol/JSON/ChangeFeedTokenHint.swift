extension ChangeFeedPage {
    /// The `syncToken` of a change feed answer that says more changes are coming, found in
    /// its text without reading its records: lets a client ask for the next page while it
    /// still reads this one.
    ///
    /// A hint, never a fact: the caller checks it against the token the full read of the
    /// answer finds, and drops what it asked for with a hint that differs. It looks only for
    /// the form a Nimbus server writes (members in sorted order, no whitespace):
    /// `{"moreComing":true,` first, and `"syncToken":"…"` within the answer's last
    /// ``searchedTail`` bytes, followed by `,` or `}`. Returns `nil` for anything else
    /// (another server's layout, an escape or a control byte in the token, a token longer
    /// than ``longestToken``), and the caller then waits for the full read.
    package static func nextTokenHint(_ bytes: some Collection<UInt8>) -> String? {
        if let hint = bytes.withContiguousStorageIfAvailable({ nextTokenHint(in: $0) }) { return hint }
        return Array(bytes).withUnsafeBufferPointer { nextTokenHint(in: $0) }
    }

    /// How far from the end the token is looked for: after `syncToken` a Nimbus answer has
    /// only `zoneID` (a zone name of at most 255 bytes and its owner).
    package static let searchedTail = 2_048
    /// The longest token taken as a hint.
    package static let longestToken = 1_024

    private static let opening = Array(#"{"moreComing":true,"#.utf8)
    private static let tokenKey = Array(#""syncToken":""#.utf8)

    private static func nextTokenHint(in bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard bytes.count > opening.count + tokenKey.count, bytes.starts(with: opening) else { return nil }
        let floor = max(opening.count, bytes.count - searchedTail)
        var start = bytes.count - tokenKey.count
        // The last occurrence: a record's own member of that name comes before it.
        while start >= floor {
            if bytes[start] == tokenKey[0], bytes[start..<start + tokenKey.count].elementsEqual(tokenKey) { break }
            start -= 1
        }
        guard start >= floor, bytes[start - 1] == UInt8(ascii: ",") else { return nil }
        let first = start + tokenKey.count
        var end = first
        while end < bytes.count, bytes[end] != UInt8(ascii: "\"") {
            // Printable ASCII without escapes: anything else is left to the full read.
            guard bytes[end] >= 0x20, bytes[end] < 0x7F, bytes[end] != UInt8(ascii: "\\") else { return nil }
            end += 1
        }
        guard end < bytes.count, end > first, end - first <= longestToken, end + 1 < bytes.count,
            bytes[end + 1] == UInt8(ascii: ",") || bytes[end + 1] == UInt8(ascii: "}")
        else { return nil }
        return String(decoding: bytes[first..<end], as: UTF8.self)
    }
}
