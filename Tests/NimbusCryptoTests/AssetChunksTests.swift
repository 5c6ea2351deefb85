import Crypto
import Foundation
import NimbusCrypto
import NimbusProtocol
import Testing
import _CryptoExtras

/// Encrypted files, versions 2 and 3: a key per chunk from the chunk's own bytes, a sealed key
/// table at the end; convergent within a zone, and no chunk can be altered, moved, dropped or
/// cut. This build writes version 3 and reads both.
@Suite("Asset chunks (versions 2 and 3)")
struct AssetChunksTests {
    static let zoneKey = ZoneKey()
    static let secrets = AssetChunks.Secrets(zoneKey: zoneKey)

    @Test(arguments: [0, 1, 15, 16, 17, 48, 1000], [UInt8(2), 3])
    func filesOfEverySizeRoundTrip(count: Int, version: UInt8) throws {
        let plain = AssetSealingTests.bytes(count)
        let secrets = AssetChunks.Secrets(zoneKey: Self.zoneKey, version: version)
        let (sealed, tableKey) = try AssetChunks.seal(plain, secrets: secrets, chunkSize: 16)
        let layout = AssetChunks.Layout(plaintextSize: Int64(count), chunkSize: 16, version: version)
        #expect(sealed.count == Int(layout.sealedSize))
        #expect(AssetChunks.Layout(sealedSize: Int64(sealed.count), chunkSize: 16, version: version) == layout)
        let header = try AssetChunks.header(sealed)
        #expect(header.version == version && header.chunkSize == 16)
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

    @Test(arguments: [UInt8(2), 3])
    func chunksAndTheTableCannotBeAlteredMovedDroppedOrCut(version: UInt8) throws {
        let plain = AssetSealingTests.bytes(64)
        let secrets = AssetChunks.Secrets(zoneKey: Self.zoneKey, version: version)
        let (sealed, tableKey) = try AssetChunks.seal(plain, secrets: secrets, chunkSize: 16)
        let layout = AssetChunks.Layout(plaintextSize: 64, chunkSize: 16, version: version)
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
        let (other, otherKey) = try AssetChunks.seal(AssetSealingTests.bytes(64).map { $0 ^ 1 }, secrets: secrets, chunkSize: 16)
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
        // The same bytes read as the other version (its header byte changed): nothing opens.
        var relabelled = sealed
        relabelled[0] = version == 2 ? 3 : 2
        #expect(FieldSealingTests.code { _ = try AssetChunks.open(relabelled, tableKey: tableKey) } == .authenticationFailed)
        let otherLayout = AssetChunks.Layout(plaintextSize: 64, chunkSize: 16, version: version == 2 ? 3 : 2)
        #expect(FieldSealingTests.code { try AssetChunks.openChunk(third, index: 2, layout: otherLayout, key: keys[64..<96], appendingTo: &opened) } == .authenticationFailed)
    }

    /// Version 3 is what docs/ENCRYPTION.md says, computed here from swift-crypto alone (what a
    /// third-party client would write): each chunk's key is the HMAC of its AES-GCM-SIV tag.
    @Test func versionThreeIsTheDocumentedConstruction() throws {
        let plain = AssetSealingTests.bytes(40)
        let (sealed, tableKey) = try AssetChunks.seal(plain, secrets: Self.secrets, chunkSize: 16)
        #expect(sealed[0] == 3 && AssetChunks.version == 3)
        func derive(_ info: String) -> SymmetricKey {
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: Self.zoneKey.key, salt: Array("nimbus.asset.v3".utf8), info: Array(info.utf8), outputByteCount: 32)
        }
        func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }
        var expected: [UInt8] = [3, 0, 0, 0, 16]
        var keys: [UInt8] = []
        for index in 0..<3 {
            let chunk = Array(plain[(index * 16)..<min(40, (index + 1) * 16)])
            let final: UInt8 = index == 2 ? 1 : 0
            let nonce = [0, 0, 0, 0] + bigEndian(UInt64(index))
            let tag = try AES.GCM._SIV.seal(
                [UInt8](), using: derive("mac"), nonce: try AES.GCM._SIV.Nonce(data: nonce), authenticating: chunk
            ).tag
            var mac = HMAC<SHA256>(key: derive("chunk"))
            mac.update(data: bigEndian(UInt32(16)) + bigEndian(UInt64(index)) + [final] + Array(tag))
            let key = Array(mac.finalize())
            keys += key
            let box = try AES.GCM.seal(
                chunk, using: SymmetricKey(data: key), nonce: try AES.GCM.Nonce(data: nonce),
                authenticating: Array("nimbus.asset.v3".utf8) + bigEndian(UInt32(16)) + bigEndian(UInt64(index)) + [final])
            expected += Array(box.ciphertext) + Array(box.tag)
        }
        var mac = HMAC<SHA256>(key: derive("table"))
        mac.update(data: bigEndian(UInt32(16)) + bigEndian(UInt64(40)) + keys)
        let table = SymmetricKey(data: Array(mac.finalize()))
        let box = try AES.GCM.seal(
            keys, using: table, nonce: try AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 12)),
            authenticating: Array("nimbus.asset.table.v3".utf8) + bigEndian(UInt32(16)) + bigEndian(UInt64(40)))
        expected += Array(box.ciphertext) + Array(box.tag)
        #expect(sealed == expected)
        #expect(tableKey == table)
    }

    /// The same file sealed in version 2 and in version 3: the same length, other bytes, and
    /// each opens with its own table key.
    @Test func theSecondFormatStillReads() throws {
        let photo = AssetSealingTests.bytes(600_000)
        let v2 = try AssetChunks.seal(photo, secrets: AssetChunks.Secrets(zoneKey: Self.zoneKey, version: 2))
        let v3 = try AssetChunks.seal(photo, secrets: Self.secrets)
        #expect(v2.ciphertext.count == v3.ciphertext.count && v2.ciphertext[0] == 2 && v3.ciphertext[0] == 3)
        #expect(v2.ciphertext[5..<1000] != v3.ciphertext[5..<1000])
        #expect(try AssetChunks.open(v2.ciphertext, tableKey: v2.tableKey) == photo)
        #expect(try AssetChunks.open(v3.ciphertext, tableKey: v3.tableKey) == photo)
        #expect(FieldSealingTests.code { _ = try AssetChunks.open(v2.ciphertext, tableKey: v3.tableKey) } == .authenticationFailed)
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
                // Headers of both versions this build reads.
                bytes[0] = round % 16 == 3 ? 2 : AssetChunks.version
                for index in 1...4 { bytes[index] = UInt8(truncatingIfNeeded: random.next()) }
            }
            _ = try? AssetChunks.open(bytes, tableKey: tableKey)
            _ = try? AssetChunks.header(bytes)
        }
        for size in [Int64.min, -1, 0, 1, 52, Int64(1) << 60, Int64.max - 1, Int64.max] {
            for chunkSize in [Int.min, -1, 0, 1, 16, 1 << 24, (1 << 24) + 1, Int.max] {
                for version in AssetChunks.versions { _ = AssetChunks.Layout(sealedSize: size, chunkSize: chunkSize, version: version) }
                _ = AssetChunks.Layout(sealedSize: size, chunkSize: chunkSize, version: 1)
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
        #expect(FieldSealingTests.code { _ = try AssetChunks.header([4, 0, 0, 1, 0]) } == .unsupportedVersion)
        // A version 1 file is not read as version 2 or 3.
        #expect(FieldSealingTests.code { _ = try AssetChunks.open(old, tableKey: fileKey.key) } == .unsupportedVersion)
    }
}
