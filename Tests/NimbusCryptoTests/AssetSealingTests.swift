import Crypto
import NimbusCrypto
import Testing

/// Encrypted files: chunked so that ranges can be read, and no chunk can be moved, dropped or cut.
@Suite("Asset sealing")
struct AssetSealingTests {
    static func bytes(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) } }

    @Test(arguments: [0, 1, 15, 16, 17, 48, 1000])
    func filesOfEverySizeRoundTrip(count: Int) throws {
        let key = SymmetricKey(size: .bits256)
        let plain = Self.bytes(count)
        let sealed = try AssetSealing.seal(plain, with: key, chunkSize: 16)
        #expect(try AssetSealing.open(sealed, with: key) == plain)
        #expect(FieldSealingTests.code { _ = try AssetSealing.open(sealed, with: SymmetricKey(size: .bits256)) } == .authenticationFailed)
    }

    @Test func chunksCannotBeMovedDroppedOrCutOff() throws {
        let key = SymmetricKey(size: .bits256)
        let plain = Self.bytes(64)
        let sealed = try AssetSealing.seal(plain, with: key, chunkSize: 16)
        let header = 9, chunk = 16 + 16
        #expect(sealed.count == header + 4 * chunk)
        // The last chunk dropped: the one before is not final.
        #expect(FieldSealingTests.code { _ = try AssetSealing.open(Array(sealed.dropLast(chunk)), with: key) } == .authenticationFailed)
        // Two chunks swapped.
        var swapped = sealed
        swapped.replaceSubrange(header..<(header + chunk), with: sealed[(header + chunk)..<(header + 2 * chunk)])
        swapped.replaceSubrange((header + chunk)..<(header + 2 * chunk), with: sealed[header..<(header + chunk)])
        #expect(FieldSealingTests.code { _ = try AssetSealing.open(swapped, with: key) } == .authenticationFailed)
        // A byte flipped anywhere after the header.
        for index in stride(from: header, to: sealed.count, by: 5) {
            var altered = sealed
            altered[index] ^= 0x80
            #expect(FieldSealingTests.code { _ = try AssetSealing.open(altered, with: key) } == .authenticationFailed)
        }
        // A ranged read of chunk 2 alone.
        let (size, prefix) = try AssetSealing.header(sealed)
        #expect(size == 16)
        let third = Array(sealed[(header + 2 * chunk)..<(header + 3 * chunk)])
        #expect(try AssetSealing.openChunk(third, index: 2, final: false, prefix: prefix, key: key) == Array(plain[32..<48]))
        #expect(FieldSealingTests.code { _ = try AssetSealing.openChunk(third, index: 1, final: false, prefix: prefix, key: key) } == .authenticationFailed)
    }
}
