@testable import NimbusServer
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
}
