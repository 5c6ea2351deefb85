import Crypto
import Foundation

/// The key of one encrypted zone (or share): AES-256, named by a random 16-byte ID that every
/// value sealed with it carries, so that a rotated zone reads old values with old keys.
///
/// ```swift
/// let key = ZoneKey()                       // a new zone, or a rotation
/// let sealed = try FieldSealing.seal(Array("Beach".utf8), with: key, for: place)
/// ```
public struct ZoneKey: Sendable, Equatable {
    /// Names the key in envelopes.
    public let id: [UInt8]
    public let key: SymmetricKey

    static let idByteCount = 16
    static let keyByteCount = 32

    /// A new random key (the system's secure random number generator).
    public init() {
        self.id = (0..<Self.idByteCount).map { _ in UInt8.random(in: 0...255) }
        self.key = SymmetricKey(size: .bits256)
    }

    /// A key from its ID and bytes (as unwrapped from a ``WrappedKey``).
    public init(id: [UInt8], bytes: [UInt8]) throws(EncryptionError) {
        guard id.count == Self.idByteCount, bytes.count == Self.keyByteCount else {
            throw EncryptionError(.malformed, "a zone key is a 16-byte ID and 32 bytes; got \(id.count) and \(bytes.count)")
        }
        self.id = id
        self.key = SymmetricKey(data: bytes)
    }

    /// The key's bytes, for wrapping.
    var bytes: [UInt8] { key.withUnsafeBytes { Array($0) } }

    public static func == (lhs: ZoneKey, rhs: ZoneKey) -> Bool {
        lhs.id == rhs.id && ConstantTime.equal(lhs.bytes, rhs.bytes)
    }

    /// The ID as hex, for logs and key directories (never the key).
    public var idHex: String { hex(id) }
}
