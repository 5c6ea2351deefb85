import Foundation

/// The byte range a download's `Range` header asks for (RFC 9110 §14.1.2), resolved
/// against the file's length.
enum ByteRange: Equatable {
    /// No `Range`, or one the server ignores (several ranges, another unit, a malformed
    /// value): the whole file, `200`.
    case whole
    /// One satisfiable range: `206` with `Content-Range`.
    case partial(Range<Int64>)
    /// A range that starts past the end: `416` with `Content-Range: bytes */length`.
    case unsatisfiable

    init(header: String?, length: Int64) {
        guard let header else {
            self = .whole
            return
        }
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes="), !trimmed.contains(",") else {
            self = .whole
            return
        }
        let spec = trimmed.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let bounds = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2 else {
            self = .whole
            return
        }
        let first = bounds[0].trimmingCharacters(in: .whitespaces)
        let last = bounds[1].trimmingCharacters(in: .whitespaces)
        if first.isEmpty {
            // bytes=-N: the last N bytes.
            guard let suffix = Int64(last), suffix >= 0 else {
                self = .whole
                return
            }
            guard suffix > 0, length > 0 else {
                self = .unsatisfiable
                return
            }
            self = .partial(max(0, length - suffix)..<length)
            return
        }
        guard let start = Int64(first), start >= 0 else {
            self = .whole
            return
        }
        var end = length - 1
        if !last.isEmpty {
            guard let requested = Int64(last), requested >= start else {
                self = .whole
                return
            }
            end = min(requested, length - 1)
        }
        guard start < length else {
            self = .unsatisfiable
            return
        }
        self = .partial(start..<(end + 1))
    }
}

/// A resumable upload's `Content-Range: bytes start-end/total` (Nimbus's extension).
struct ContentRange: Equatable {
    var start: Int64
    /// Inclusive.
    var end: Int64
    var total: Int64

    var count: Int64 { end - start + 1 }

    init?(header: String) {
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst(6)
        let halves = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2, let total = Int64(halves[1]) else { return nil }
        let bounds = halves[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, let start = Int64(bounds[0]), let end = Int64(bounds[1]),
            start >= 0, end >= start, end < total
        else { return nil }
        self.start = start
        self.end = end
        self.total = total
    }
}
