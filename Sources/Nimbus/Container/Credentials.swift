import Crypto
import Foundation
import NimbusProtocol

/// How requests authenticate: an API token (plus a user's web auth token for private and
/// shared data), or a server-to-server key that signs each request (public database only).
public struct Credentials: Sendable {
    enum Kind: Sendable {
        case tokens(apiToken: String, webAuthToken: String?)
        /// The key's raw representation (`P256.Signing.PrivateKey` is not `Sendable`).
        case serverKey(keyID: String, rawKey: Data)
    }

    let kind: Kind

    /// An API token (`ckAPIToken`) and, for a signed-in user, a web auth token (`ckWebAuthToken`).
    public static func apiToken(_ apiToken: String, webAuthToken: String? = nil) -> Credentials {
        Credentials(kind: .tokens(apiToken: apiToken, webAuthToken: webAuthToken))
    }

    /// A server-to-server key: requests are signed with the P-256 private key whose public
    /// half was registered on the server under `keyID`.
    /// - Parameters:
    ///   - keyID: the key's ID on the server.
    ///   - privateKeyPEM: the private key in PEM form (`-----BEGIN EC PRIVATE KEY-----`
    ///     or PKCS#8 `-----BEGIN PRIVATE KEY-----`).
    public static func serverToServerKey(keyID: String, privateKeyPEM: String) throws -> Credentials {
        do {
            let key = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
            return Credentials(kind: .serverKey(keyID: keyID, rawKey: key.rawRepresentation))
        } catch {
            throw NimbusError(.invalidArguments, "the server-to-server key is not a P-256 private key in PEM form: \(error)")
        }
    }

    /// The same API token with another user's web auth token (or none).
    public func withWebAuthToken(_ webAuthToken: String?) -> Credentials {
        switch kind {
        case .tokens(let apiToken, _): return .apiToken(apiToken, webAuthToken: webAuthToken)
        case .serverKey: return self
        }
    }

    /// Query items for token authentication.
    var queryItems: [URLQueryItem] {
        guard case .tokens(let apiToken, let webAuthToken) = kind else { return [] }
        var items = [URLQueryItem(name: "ckAPIToken", value: apiToken)]
        if let webAuthToken { items.append(URLQueryItem(name: "ckWebAuthToken", value: webAuthToken)) }
        return items
    }

    /// Headers for server-to-server authentication: key ID, date and the signature over
    /// `"{date}:{base64(sha256(body))}:{subpath}"`.
    func signatureHeaders(body: Data, subpath: String, date: Date) throws -> [String: String] {
        guard case .serverKey(let keyID, let rawKey) = kind else { return [:] }
        let privateKey = try P256.Signing.PrivateKey(rawRepresentation: rawKey)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        let dateText = formatter.string(from: date)
        let bodyHash = Data(SHA256.hash(data: body)).base64EncodedString()
        let message = Data("\(dateText):\(bodyHash):\(subpath)".utf8)
        let signature = try privateKey.signature(for: message)
        return [
            "X-Apple-CloudKit-Request-KeyID": keyID,
            "X-Apple-CloudKit-Request-ISO8601Date": dateText,
            "X-Apple-CloudKit-Request-SignatureV1": signature.derRepresentation.base64EncodedString(),
        ]
    }
}
