import Crypto
import Foundation
import NimbusCrypto
import NimbusProtocol
import Testing

/// Encrypted files, version 2: a key per chunk from the chunk's own bytes, a sealed key table
/// at the end; convergent within a zone, and no chunk can be altered, moved, dropped or cut.
@Suite("Asset chunks (version 2)")
struct AssetChunksTests {
    static let secrets = AssetChunks.Secrets(zoneKey: ZoneKey())

    @Test(arguments: [0, 1, 15, 16, 17, 48, 1000])
    func filesOfEverySizeRoundTrip(count: Int) throws {
        let plain = AssetSealingTests.bytes(count)
        let (sealed, tableKey) = try AssetChunks.seal(plain, secrets: Self.secrets, chunkSize: 16)
        let layout = AssetChunks.Layout(plaintextSize: Int64(count), chunkSize: 16)
        #expect(sealed.count == Int(layout.sealedSize))
        #expect(AssetChunks.Layout(sealedSize: Int64(sealed.count), chunkSize: 16) == layout)
        let header = try AssetChunks.header(sealed)
        #expect(header.version == 2 && header.chunkSize == 16)
        #expect(try AssetChunks.open(sealed, tableKey: tableKey) == plain)
        #expect(FieldSealingTests.code { _ = try AssetChunks.open(sealed, tableKey: SymmetricKey(size: .bits256)) } == .authenticationFailed)
        // One byte more or less reads as another file's length, whose table does not open.
        #expect(FieldSealingTests.code { _ = try AssetChunks.open(sealed + [0], tableKey: tableKey) } == .authenticationFailed)
        #expect(FieldSealingTests.code { _ = try AssetChunks.open(Array(sealed.dropLast()), tableKey: tableKey) } == .authenticationFailed)
    }

    @Test func theSameFileInTheSameZoneIsTheSameCiphertextAndNowhereElse() throws {
        let photo = AssetSealingTests.bytes(700_000)
        let first = try AssetChunks.seal(photo, secrets: Self.secrets)
        let again = try AssetChunks.seal(photo, secrets: Self.secrets)
        #expect(first.ciphertext == again.ciphertext)
        #expect(first.tableKey == again.tableKey)
        let otherZone = try AssetChunks.seal(photo, secrets: AssetChunks.Secrets(zoneKey: ZoneKey()))
        #expect(otherZone.ciphertext != first.ciphertext)
        // One byte changed in chunk 1: chunks 0 and 2 stay the same ciphertext (what the server
        // learns: which chunks of a file in the zone are equal), chunk 1 and the table differ.
        var edited = photo
        edited[AssetChunks.defaultChunkSize + 10] ^= 1
        let changed = try AssetChunks.seal(edited, secrets: Self.secrets).ciphertext
        let layout = AssetChunks.Layout(plaintextSize: Int64(photo.count))
        func chunk(_ bytes: [UInt8], _ index: Int) -> ArraySlice<UInt8> {
            bytes[Int(layout.chunkOffset(index))..<Int(layout.chunkOffset(index + 1))]
        }
        #expect(chunk(changed, 0) == chunk(first.ciphertext, 0))
        #expect(chunk(changed, 1) != chunk(first.ciphertext, 1))
        #expect(chunk(changed, 2) == chunk(first.ciphertext, 2))
        // Equal chunks at different places of one file are different ciphertext.
        let twice = Array(photo.prefix(AssetChunks.defaultChunkSize)) + Array(photo.prefix(AssetChunks.defaultChunkSize)) + [1]
        let sealedTwice = try AssetChunks.seal(twice, secrets: Self.secrets).ciphertext
        #expect(chunk(sealedTwice, 0) != chunk(sealedTwice, 1))
    }

    @Test func chunksAndTheTableCannotBeAlteredMovedDroppedOrCut() throws {
        let plain = AssetSealingTests.bytes(64)
        let (sealed, tableKey) = try AssetChunks.seal(plain, secrets: Self.secrets, chunkSize: 16)
        let layout = AssetChunks.Layout(plaintextSize: 64, chunkSize: 16)
        let header = AssetChunks.headerByteCount, chunk = 16 + 16
        #expect(layout.chunkCount == 4 && layout.tableByteCount == 4 * 32 + 16)
        // Two chunks swapped.
        var swapped = sealed
        swapped.replaceSubrange(header..<(header + chunk), with: sealed[(header + chunk)..<(header + 2 * chunk)])
        swapped.replaceSubrange((header + chunk)..<(header + 2 * chunk), with: sealed[header..<(header + chunk)])
        #expect(FieldSealingTests.code { _ = try AssetChunks.open(swapped, tableKey: tableKey) } == .authenticationFailed)
        // The last chunk dropped (and the table kept): the length fits no file.
        let dropped = Array(sealed[..<(header + 3 * chunk)]) + Array(sealed[(header + 4 * chunk)...])
        #expect(FieldSealingTests.code { _ = try AssetChunks.open(dropped, tableKey: tableKey) } == .authenticationFailed)
        // Cut at the end.
        #expect(FieldSealingTests.code { _ = try AssetChunks.open(Array(sealed.dropLast(1)), tableKey: tableKey) } == .authenticationFailed)
        // A byte flipped anywhere, the header included.
        for index in stride(from: 1, to: sealed.count, by: 3) {
            var altered = sealed
            altered[index] ^= 0x80
            #expect(throws: EncryptionError.self) { _ = try AssetChunks.open(altered, tableKey: tableKey) }
        }
        // Another file's table (same length) does not open this one's chunks.
        let (other, otherKey) = try AssetChunks.seal(AssetSealingTests.bytes(64).map { $0 ^ 1 }, secrets: Self.secrets, chunkSize: 16)
        let grafted = Array(sealed[..<Int(layout.tableOffset)]) + Array(other[Int(layout.tableOffset)...])
        #expect(FieldSealingTests.code { _ = try AssetChunks.open(grafted, tableKey: otherKey) } == .authenticationFailed)
        // A ranged read: chunk 2 alone, with its key from the table; not as chunk 1.
        let keys = try AssetChunks.openTable(sealed[Int(layout.tableOffset)...], layout: layout, tableKey: tableKey)
        let third = sealed[Int(layout.chunkOffset(2))..<Int(layout.chunkOffset(3))]
        var opened: [UInt8] = []
        try AssetChunks.openChunk(third, index: 2, layout: layout, key: keys[64..<96], appendingTo: &opened)
        #expect(opened == Array(plain[32..<48]))
        #expect(FieldSealingTests.code { try AssetChunks.openChunk(third, index: 1, layout: layout, key: keys[32..<64], appendingTo: &opened) } == .authenticationFailed)
        #expect(FieldSealingTests.code { try AssetChunks.openChunk(third, index: 2, layout: layout, key: keys[32..<64], appendingTo: &opened) } == .authenticationFailed)
    }

    /// Bytes and sizes from the network never trap: 5,000 seeded random files (random bytes,
    /// valid files cut, grown and flipped, headers with any chunk size) and extreme sizes each
    /// open or throw.
    @Test func hostileFilesAndSizesNeverTrap() throws {
        let (sealed, tableKey) = try AssetChunks.seal(AssetSealingTests.bytes(100), secrets: Self.secrets, chunkSize: 16)
        var random = SplitMix64(seed: 0x5EED_A55E)
        for round in 0..<5_000 {
            var bytes: [UInt8]
            switch round % 4 {
            case 0: bytes = (0..<Int(random.next() % 300)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            case 1: bytes = Array(sealed.prefix(Int(random.next() % UInt64(sealed.count + 1))))
            case 2: bytes = sealed + (0..<Int(random.next() % 64)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            default:
                bytes = sealed
                bytes[Int(random.next() % UInt64(bytes.count))] ^= UInt8(truncatingIfNeeded: random.next() | 1)
            }
            if round % 8 == 3, bytes.count >= 5 {
                bytes[0] = AssetChunks.version
                for index in 1...4 { bytes[index] = UInt8(truncatingIfNeeded: random.next()) }
            }
            _ = try? AssetChunks.open(bytes, tableKey: tableKey)
            _ = try? AssetChunks.header(bytes)
        }
        for size in [Int64.min, -1, 0, 1, 52, Int64(1) << 60, Int64.max - 1, Int64.max] {
            for chunkSize in [Int.min, -1, 0, 1, 16, 1 << 24, (1 << 24) + 1, Int.max] {
                _ = AssetChunks.Layout(sealedSize: size, chunkSize: chunkSize)
            }
        }
    }

    @Test func theFirstFormatStillReads() throws {
        let zone = ZoneKey()
        let photo = AssetSealingTests.bytes(200_000)
        let fileKey = AssetFileKey.convergent(zoneKey: zone, plaintextDigest: Array(SHA256.hash(data: photo)))
        let old = try AssetSealing.seal(photo, with: fileKey)
        let header = try AssetChunks.header(old)
        #expect(header.version == 1 && header.chunkSize == AssetSealing.defaultChunkSize)
        #expect(try AssetSealing.open(old, with: fileKey.key) == photo)
        #expect(FieldSealingTests.code { _ = try AssetChunks.header([3, 0, 0, 1, 0]) } == .unsupportedVersion)
        // A version 1 file is not read as version 2.
        #expect(FieldSealingTests.code { _ = try AssetChunks.open(old, tableKey: fileKey.key) } == .unsupportedVersion)
    }
}
