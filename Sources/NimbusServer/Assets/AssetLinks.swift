import Crypto
import Foundation
import NimbusProtocol
import NimbusStore

/// The URLs the server hands out for asset bytes, signed with a key derived from the server
/// secret (``ChangeTokens/derivedKey(for:)``), so that nobody reaches an upload or a file by
/// guessing:
///
/// - an upload URL, `/assets/1/upload/{token}`, names one upload slot until it expires;
/// - a download URL, `/assets/1/download/{token}/${f}`, names one asset of one database until
///   it expires. It is handed out only with a record the caller may read, so it carries the
///   caller's access for its lifetime (as Apple's download URLs do); `${f}` is Apple's
///   placeholder for a file name the client chooses, and is ignored.
///
/// A token is `base64url(payload) "." base64url(first 16 bytes of HMAC-SHA256(payload))`,
/// its payload a JSON array starting with its kind and its expiry (milliseconds).
struct AssetLinks: Sendable {
    /// The signing key's bytes (`SymmetricKey` is not `Sendable`).
    let keyBytes: [UInt8]

    init(tokens: ChangeTokens) {
        self.keyBytes = tokens.derivedKey(for: "asset urls")
    }

    private var key: SymmetricKey { SymmetricKey(data: keyBytes) }

    static let uploadPrefix = "/assets/1/upload/"
    static let downloadPrefix = "/assets/1/download/"

    func uploadURL(origin: String, id: String, expiresAt: Int64) -> String {
        origin + Self.uploadPrefix + seal([.string("u1"), .int(expiresAt), .string(id)])
    }

    func downloadURL(origin: String, database: DatabaseKey, sha256: String, expiresAt: Int64) -> String {
        let payload: [JSON] = [
            .string("d1"), .int(expiresAt), .string(database.container), .string(database.environment.rawValue),
            .string(database.scope.rawValue), .string(database.owner), .string(sha256),
        ]
        return origin + Self.downloadPrefix + seal(payload) + "/" + Asset.fileNamePlaceholder
    }

    /// The upload id an upload token names.
    /// - Throws: NOT_FOUND for text that is no upload token of this server; BAD_REQUEST for
    ///   an expired one.
    func upload(_ token: String, now: Int64) throws(CloudKitError) -> String {
        let payload = try open(token, kind: "u1", now: now)
        guard payload.count == 3, case .string(let id) = payload[2] else { throw Self.unknown }
        return id
    }

    /// The database and SHA-256 a download token names.
    func download(_ token: String, now: Int64) throws(CloudKitError) -> (database: DatabaseKey, sha256: String) {
        let payload = try open(token, kind: "d1", now: now)
        guard payload.count == 7, case .string(let container) = payload[2], case .string(let environmentName) = payload[3],
            case .string(let scopeName) = payload[4], case .string(let owner) = payload[5],
            case .string(let sha) = payload[6], let environment = ContainerEnvironment(rawValue: environmentName),
            let scope = DatabaseScope(rawValue: scopeName)
        else { throw Self.unknown }
        return (DatabaseKey(container: container, environment: environment, scope: scope, owner: owner), sha)
    }

    static let unknown = CloudKitError(.notFound, "this asset URL is not one this server issued")

    private func seal(_ payload: [JSON]) -> String {
        let bytes = JSON.array(payload).serializedBytes()
        let mac = HMAC<SHA256>.authenticationCode(for: bytes, using: key).prefix(16)
        return Base64URL.encode(bytes) + "." + Base64URL.encode(Array(mac))
    }

    private func open(_ token: String, kind: String, now: Int64) throws(CloudKitError) -> [JSON] {
        guard token.utf8.count <= 4096 else { throw Self.unknown }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let payload = Base64URL.decode(parts[0]), let mac = Base64URL.decode(parts[1]),
            mac.count == 16
        else { throw Self.unknown }
        let expected = HMAC<SHA256>.authenticationCode(for: payload, using: key).prefix(16)
        // Compared in constant time.
        guard zip(expected, mac).reduce(UInt8(0), { $0 | ($1.0 ^ $1.1) }) == 0 else { throw Self.unknown }
        guard case .array(let members)? = try? JSON.parse(payload), members.count >= 2,
            case .string(let tokenKind) = members[0], tokenKind == kind
        else { throw Self.unknown }
        guard let expiry = Self.integer(members[1]), expiry > now else {
            throw CloudKitError(.badRequest, "this asset URL has expired; ask for a new one")
        }
        return members
    }

    private static func integer(_ json: JSON) -> Int64? {
        guard case .number(let text) = json else { return nil }
        return Int64(text)
    }
}
