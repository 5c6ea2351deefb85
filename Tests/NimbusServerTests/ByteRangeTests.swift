@testable import NimbusServer
import NimbusProtocol
import Testing

/// Download `Range` headers and resumable-upload `Content-Range` headers, resolved without I/O.
@Suite("Byte ranges")
struct ByteRangeTests {
    @Test(arguments: [
        (nil as String?, ByteRange.whole),
        ("bytes=0-99", .partial(0..<100)),
        ("bytes=100-", .partial(100..<1000)),
        ("bytes=-10", .partial(990..<1000)),
        ("bytes=-5000", .partial(0..<1000)),
        ("bytes=900-5000", .partial(900..<1000)),
        ("bytes=1000-", .unsatisfiable),
        ("bytes=-0", .unsatisfiable),
        ("bytes=0-1,5-6", .whole),
        ("items=0-1", .whole),
        ("bytes=5-1", .whole),
        ("bytes=x-1", .whole),
        ("bytes=", .whole),
    ])
    func rangesResolveAgainstTheLength(header: String?, expected: ByteRange) {
        #expect(ByteRange(header: header, length: 1000) == expected)
    }

    @Test func anEmptyFileHasNoSatisfiableRange() {
        #expect(ByteRange(header: "bytes=0-", length: 0) == .unsatisfiable)
        #expect(ByteRange(header: "bytes=-1", length: 0) == .unsatisfiable)
    }

    @Test func contentRangesOfChunks() {
        #expect(ContentRange(header: "bytes 0-99/1000") == ContentRange(header: "bytes 0-99/1000"))
        let chunk = ContentRange(header: "bytes 100-199/1000")
        #expect(chunk?.start == 100 && chunk?.end == 199 && chunk?.total == 1000 && chunk?.count == 100)
        for bad in ["bytes 0-1000/1000", "bytes 5-1/10", "bytes */1000", "bytes -1-5/10", "0-9/10", "bytes 0-9/x"] {
            #expect(ContentRange(header: bad) == nil, "\(bad)")
        }
    }

    /// Headers are bytes from the network: random and near-valid ones never trap, and what
    /// they resolve to always lies inside the file (or the chunk inside its total).
    @Test func generatedHeadersNeverTrapAndStayInBounds() {
        var random = SplitMix64(seed: 0x5EED_B17E)
        let pieces = [
            "bytes", "bytes=", "bytes ", "=", "-", "/", ",", " ", "*", "0", "1", "99", "-1", "+5",
            "9223372036854775807", "9223372036854775808", "-9223372036854775808", "18446744073709551616",
            "\u{0}", "é", "items=", "BYTES=",
        ]
        for _ in 0..<20_000 {
            let header = (0..<random.int(0...7)).map { _ in random.pick(pieces) }.joined()
            let length = random.pick([0, 1, 1000, Int64.max, Int64(random.int(0...5000))])
            switch ByteRange(header: header, length: length) {
            case .partial(let range):
                #expect(range.lowerBound >= 0 && range.upperBound <= length && !range.isEmpty, "\(header) of \(length)")
            case .whole, .unsatisfiable:
                break
            }
            if let chunk = ContentRange(header: header) {
                #expect(chunk.start >= 0 && chunk.start <= chunk.end && chunk.end < chunk.total, "\(header)")
                #expect(chunk.count >= 1, "\(header)")
            }
        }
    }
}
