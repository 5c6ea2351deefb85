import Crypto
import Foundation
import NimbusCrypto
import Testing

/// File keys: convergent within a zone (the same file is the same ciphertext), different
/// across zones, and wrapped for one record field.
@Suite("Asset keys")
struct AssetKeysTests {
    static let place = FieldPlace(container: "c", zoneName: "Album", ownerRecordName: "_a", recordName: "photo-1", fieldName: "image")

    static func digest(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }

    @Test func theSameFileInTheSameZoneIsTheSameCiphertextAndNowhereElse() throws {
        let zone = ZoneKey()
        let photo = AssetSealingTests.bytes(200_000)
        let first = try AssetSealing.seal(photo, with: AssetFileKey.convergent(zoneKey: zone, plaintextDigest: Self.digest(photo)))
        let again = try AssetSealing.seal(photo, with: AssetFileKey.convergent(zoneKey: zone, plaintextDigest: Self.digest(photo)))
        #expect(first == again)
        #expect(first.count == Int(AssetSealing.sealedSize(plaintextSize: Int64(photo.count))))
        #expect(AssetSealing.plaintextSize(sealedSize: Int64(first.count), chunkSize: AssetSealing.defaultChunkSize) == Int64(photo.count))
        // Another zone (or a rotated key), another chunk size, another file: other bytes.
        let otherZone = try AssetSealing.seal(photo, with: AssetFileKey.convergent(zoneKey: ZoneKey(), plaintextDigest: Self.digest(photo)))
        #expect(otherZone != first)
        let otherChunks = AssetFileKey.convergent(zoneKey: zone, plaintextDigest: Self.digest(photo), chunkSize: 1 << 12)
        let base = AssetFileKey.convergent(zoneKey: zone, plaintextDigest: Self.digest(photo))
        #expect(otherChunks.key != base.key)
        // The ciphertext opens with the key alone (the header names the chunking).
        #expect(try AssetSealing.open(first, with: base.key) == photo)
        #expect(FieldSealingTests.code { _ = try AssetSealing.open(first, with: otherChunks.key) } == .authenticationFailed)
    }

    @Test func aWrappedFileKeyNamesItsZoneAndOpensOnlyForItsPlace() throws {
        let zone = ZoneKey()
        let fileKey = AssetFileKey.convergent(zoneKey: zone, plaintextDigest: Self.digest([1, 2, 3]))
        let wrapped = try WrappedAssetKey.wrap(fileKey, with: zone, for: Self.place)
        let read = try WrappedAssetKey(wrapped.bytes)
        #expect(read == wrapped)
        #expect(read.zoneName == "Album" && read.ownerRecordName == "_a" && read.keyID == zone.id)
        #expect(read.belongs(to: Self.place))
        var other = Self.place
        other.fieldName = "thumbnail"
        #expect(!read.belongs(to: other))
        other = Self.place
        other.recordName = "photo-2"
        #expect(!read.belongs(to: other))
        let key = try read.unwrap(keys: [ZoneKey(), zone], container: "c")
        #expect(key == fileKey.key)
        #expect(read.referenceChecksum == Data(SHA256.hash(data: wrapped.bytes)).base64EncodedString())
        // Another container, another zone key, every altered byte: nothing opens.
        #expect(FieldSealingTests.code { _ = try read.unwrap(keys: [zone], container: "other") } == .authenticationFailed)
        #expect(FieldSealingTests.code { _ = try read.unwrap(keys: [ZoneKey()], container: "c") } == .unknownKey)
        for index in wrapped.bytes.indices {
            var altered = wrapped.bytes
            altered[index] ^= 0x01
            #expect(FieldSealingTests.code {
                let changed = try WrappedAssetKey(altered)
                _ = try changed.unwrap(keys: [zone], container: "c")
                guard changed.belongs(to: Self.place) else { throw EncryptionError(.authenticationFailed, "moved") }
            } != nil, "byte \(index)")
        }
        #expect(FieldSealingTests.code { _ = try WrappedAssetKey(Array(wrapped.bytes.dropLast())) } == .malformed)
        #expect(FieldSealingTests.code { _ = try WrappedAssetKey([2] + wrapped.bytes.dropFirst()) } == .unsupportedVersion)
    }
}
