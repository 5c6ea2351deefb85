import Crypto
import NimbusCrypto
import Testing

/// Encrypted field values: they open only with their zone key and only in their place; an
/// altered, truncated or moved value is an error, never a wrong plaintext.
@Suite("Field sealing")
struct FieldSealingTests {
    static let place = FieldPlace(
        container: "iCloud.com.example.album", zoneName: "Album", ownerRecordName: "_alice", recordName: "photo-1",
        fieldName: "caption")

    static func code(_ body: () throws -> Void) -> EncryptionError.Code? {
        do {
            try body()
            return nil
        } catch let error as EncryptionError {
            return error.code
        } catch {
            return nil
        }
    }

    @Test func aValueOpensWithItsKeyInItsPlace() throws {
        let key = ZoneKey()
        let envelope = try FieldSealing.seal(Array("Beach at dawn".utf8), with: key, for: Self.place)
        #expect(!envelope.containsSubsequence(Array("Beach".utf8)), "no plaintext in the envelope")
        #expect(try FieldSealing.open(envelope, keys: [ZoneKey(), key], for: Self.place) == Array("Beach at dawn".utf8))
        #expect(FieldSealing.keyID(of: envelope) == key.id)
        // Sealing twice gives two envelopes (fresh nonces), both opening to the same value.
        let again = try FieldSealing.seal(Array("Beach at dawn".utf8), with: key, for: Self.place)
        #expect(again != envelope)
        #expect(try FieldSealing.open(again, keys: [key], for: Self.place) == Array("Beach at dawn".utf8))
        // Empty values too.
        #expect(try FieldSealing.open(try FieldSealing.seal([], with: key, for: Self.place), keys: [key], for: Self.place) == [])
    }

    @Test func everyAlterationFailsAuthentication() throws {
        let key = ZoneKey()
        let envelope = try FieldSealing.seal(Array("Beach".utf8), with: key, for: Self.place)
        for index in (1 + 16)..<envelope.count {
            var altered = envelope
            altered[index] ^= 0x40
            #expect(Self.code { _ = try FieldSealing.open(altered, keys: [key], for: Self.place) } == .authenticationFailed)
        }
        #expect(Self.code { _ = try FieldSealing.open(Array(envelope.dropLast()), keys: [key], for: Self.place) } == .authenticationFailed)
        #expect(Self.code { _ = try FieldSealing.open(Array(envelope.prefix(20)), keys: [key], for: Self.place) } == .malformed)
        var version = envelope
        version[0] = 2
        #expect(Self.code { _ = try FieldSealing.open(version, keys: [key], for: Self.place) } == .unsupportedVersion)
        #expect(Self.code { _ = try FieldSealing.open(envelope, keys: [ZoneKey()], for: Self.place) } == .unknownKey)
        // Another key claiming the same ID does not open it.
        let impostor = try ZoneKey(id: key.id, bytes: Array(repeating: 7, count: 32))
        #expect(Self.code { _ = try FieldSealing.open(envelope, keys: [impostor], for: Self.place) } == .authenticationFailed)
    }

    /// An envelope whose parts were re-ordered (nonce, ciphertext and tag moved around, the
    /// ciphertext's blocks swapped, two envelopes spliced) is refused, never opened wrongly.
    @Test func aReorderedOrSplicedValueFailsAuthentication() throws {
        let key = ZoneKey()
        let text = Array("Beach at dawn, then the harbour at noon".utf8)
        let envelope = try FieldSealing.seal(text, with: key, for: Self.place)
        let other = try FieldSealing.seal(Array("Dunes".utf8) + Array(repeating: 0x20, count: text.count - 5), with: key, for: Self.place)
        let head = Array(envelope.prefix(17))  // version and key ID
        let nonce = Array(envelope[17..<29])
        let body = Array(envelope[29..<(envelope.count - 16)])
        let tag = Array(envelope.suffix(16))
        let reorderings: [[UInt8]] = [
            head + Array(body.prefix(12)) + nonce + Array(body.dropFirst(12)) + tag,  // nonce and ciphertext swapped
            head + nonce + tag + body,  // the tag before the ciphertext
            head + nonce + Array(body.dropFirst(16)) + Array(body.prefix(16)) + tag,  // the ciphertext's blocks rotated
            head + nonce + Array(body.reversed()) + tag,
            head + Array(other[17..<29]) + body + tag,  // another envelope's nonce
            head + nonce + body + Array(other.suffix(16)),  // another envelope's tag
            head + nonce + Array(body.prefix(16)) + Array(other[(29 + 16)..<(other.count - 16)]) + tag,  // spliced
        ]
        for (index, reordered) in reorderings.enumerated() {
            #expect(Self.code { _ = try FieldSealing.open(reordered, keys: [key], for: Self.place) } == .authenticationFailed, "\(index)")
        }
        #expect(try FieldSealing.open(envelope, keys: [key], for: Self.place) == text)
    }

    /// A server that moves a ciphertext to another field, record, zone, owner or container is caught.
    @Test func aValueMovedElsewhereDoesNotOpen() throws {
        let key = ZoneKey()
        let envelope = try FieldSealing.seal(Array("Beach".utf8), with: key, for: Self.place)
        var places: [FieldPlace] = []
        for path in [\FieldPlace.container, \.zoneName, \.ownerRecordName, \.recordName, \.fieldName] {
            var moved = Self.place
            moved[keyPath: path] += "x"
            places.append(moved)
        }
        for place in places {
            #expect(Self.code { _ = try FieldSealing.open(envelope, keys: [key], for: place) } == .authenticationFailed)
        }
    }

    /// A batch's nonces (read from the system 21 at a time): 5,000 sealings across many reads
    /// of the pool, every nonce different and every value opening in its place.
    @Test func aBatchsNoncesAreAllDifferentAndItsValuesOpen() throws {
        let key = ZoneKey()
        var nonces = RandomNonces()
        var seen = Set<[UInt8]>()
        for index in 0..<5_000 {
            let value = Array("value \(index)".utf8)
            let envelope = Array(try FieldSealing.sealedData(value, with: key, for: Self.place, nonces: &nonces))
            // The nonce follows the version byte and the 16-byte key ID.
            seen.insert(Array(envelope[17..<29]))
            #expect(try FieldSealing.open(envelope, keys: [key], for: Self.place) == value)
        }
        #expect(seen.count == 5_000)
        // Two batches draw their own nonces.
        var other = RandomNonces()
        #expect(!seen.contains(Array(other.next())))
    }

    @Test func zoneKeysRoundTripThroughTheirBytes() throws {
        let key = ZoneKey()
        #expect(key.idHex.count == 32)
        #expect(throws: EncryptionError.self) { try ZoneKey(id: [1, 2], bytes: Array(repeating: 0, count: 32)) }
        #expect(throws: EncryptionError.self) { try ZoneKey(id: key.id, bytes: [1]) }
    }
}

extension Array where Element == UInt8 {
    func containsSubsequence(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return needle.isEmpty }
        return (0...(count - needle.count)).contains { Array(self[$0..<($0 + needle.count)]) == needle }
    }
}
