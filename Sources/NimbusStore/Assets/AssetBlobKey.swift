import Crypto
import Foundation
import NimbusProtocol

/// The content address of an asset's bytes in one database: `<database>/<sha256>`, both as
/// lowercase hex. The same bytes saved in two databases are two blobs (a database's assets
/// are freed with it and no database learns what another holds); within a database they
/// are one.
public struct AssetBlobKey: Sendable, Hashable, CustomStringConvertible {
    /// The bytes an ``AssetStore`` hands a reader at a time, and PostgreSQL's chunk size.
    public static let chunkSize = 1 << 20

    /// 32 hex digits naming the database (a hash of its key).
    public var database: String
    /// The SHA-256 of the bytes, 64 hex digits.
    public var sha256: String

    public init(database: DatabaseKey, sha256: String) {
        self.database = Self.databaseTag(database)
        self.sha256 = sha256
    }

    /// Parses ``description``; `nil` for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 32, parts[1].count == 64,
            parts.allSatisfy({ $0.allSatisfy(\.isHexDigit) && $0 == $0.lowercased() })
        else { return nil }
        self.database = String(parts[0])
        self.sha256 = String(parts[1])
    }

    public var description: String { "\(database)/\(sha256)" }

    /// The hash naming a database in blob keys.
    public static func databaseTag(_ database: DatabaseKey) -> String {
        let identity = [database.container, database.environment.rawValue, database.scope.rawValue, database.owner]
            .joined(separator: "\u{0}")
        return SHA256.hash(data: Array(identity.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
    }
}

extension Asset {
    /// The ``fileChecksum`` of bytes whose SHA-256 is `digest`: its base64.
    public static func fileChecksum(sha256 digest: some Sequence<UInt8>) -> String {
        Data(digest).base64EncodedString()
    }

    /// The ``fileChecksum`` of bytes whose SHA-256 is `hex` (lowercase hex).
    public static func fileChecksum(sha256Hex hex: String) -> String {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) {
            guard let byte = UInt8(hex[index..<next], radix: 16) else { break }
            bytes.append(byte)
            index = next
        }
        return fileChecksum(sha256: bytes)
    }

    /// The SHA-256 a ``fileChecksum`` names, as lowercase hex; `nil` when it is not the base64
    /// of 32 bytes (no upload to this server answered it).
    public static func sha256Hex(ofFileChecksum checksum: String) -> String? {
        guard let bytes = Data(base64Encoded: checksum), bytes.count == 32 else { return nil }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }
}
