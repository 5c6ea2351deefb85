import Crypto
import Foundation
import NimbusProtocol
import NimbusStore

/// Authenticates CloudKit Web Services requests: API tokens, web auth tokens and
/// server-to-server keys (ECDSA P-256 signatures over date, body hash and path).
struct Authenticator: Sendable {
    let accounts: any AccountStore
    let signatureWindow: Duration

    struct Credentials: Sendable {
        var apiToken: String?
        var webAuthToken: String?
        var keyID: String?
        var signatureDate: String?
        var signature: String?
        var deviceID: String?
    }

    /// - Parameters:
    ///   - subpath: the URL path the signature covers (`/database/1/…/records/query`).
    ///   - body: the body bytes exactly as received.
    func authenticate(
        _ credentials: Credentials, container: String, environment: ContainerEnvironment, scope: DatabaseScope,
        subpath: String, body: [UInt8], now: Date = Date()
    ) async throws -> RequestIdentity {
        var identity = RequestIdentity(
            container: container, environment: environment, scope: scope, user: nil, serverKeyID: nil,
            deviceID: credentials.deviceID)

        if let keyID = credentials.keyID {
            try await verifySignature(credentials, keyID: keyID, container: container, subpath: subpath, body: body, now: now)
            guard scope == .public else {
                throw CloudKitError(
                    .accessDenied, "server-to-server keys reach the public database only; use a web auth token for private data")
            }
            identity.serverKeyID = keyID
            return identity
        }

        guard let apiToken = credentials.apiToken, !apiToken.isEmpty else {
            throw CloudKitError(
                .authenticationRequired,
                "this request needs authentication: pass ckAPIToken (and ckWebAuthToken for private data) "
                    + "as query parameters, or sign it with a server-to-server key")
        }
        let webToken = credentials.webAuthToken.flatMap { $0.isEmpty ? nil : $0 }
        // Both tokens in one read; the checks below run in the same order as separate lookups.
        let lookup = try await accounts.lookUpTokens(apiToken: apiToken, webAuthToken: webToken)
        guard let tokenContainer = lookup.container else {
            throw CloudKitError(.authenticationFailed, "the ckAPIToken is unknown or revoked")
        }
        guard tokenContainer == container else {
            throw CloudKitError(
                .authenticationFailed, "the ckAPIToken belongs to container \(tokenContainer), not \(container)")
        }
        if webToken != nil {
            guard let user = lookup.user else {
                throw CloudKitError(.authenticationFailed, "the ckWebAuthToken is unknown or revoked; sign in again")
            }
            guard user.container == container else {
                throw CloudKitError(
                    .authenticationFailed, "the ckWebAuthToken was issued for container \(user.container), not \(container)")
            }
            identity.user = user
        }
        if scope != .public && identity.user == nil {
            throw CloudKitError(
                .authenticationRequired,
                "the \(scope.rawValue) database needs a signed-in user: pass ckWebAuthToken")
        }
        return identity
    }

    private func verifySignature(
        _ credentials: Credentials, keyID: String, container: String, subpath: String, body: [UInt8], now: Date
    ) async throws {
        guard let dateText = credentials.signatureDate, let signatureText = credentials.signature else {
            throw CloudKitError(
                .authenticationFailed,
                "a server-to-server request needs X-Apple-CloudKit-Request-ISO8601Date and X-Apple-CloudKit-Request-SignatureV1")
        }
        guard let key = try await accounts.serverKey(id: keyID) else {
            throw CloudKitError(.authenticationFailed, "the server-to-server key \(keyID) is unknown or revoked")
        }
        guard key.container == container else {
            throw CloudKitError(.authenticationFailed, "the key \(keyID) belongs to container \(key.container)")
        }
        guard let date = Self.parseISO8601(dateText) else {
            throw CloudKitError(
                .authenticationFailed, "X-Apple-CloudKit-Request-ISO8601Date '\(dateText)' is not an ISO 8601 date")
        }
        let window = Double(signatureWindow.milliseconds) / 1000
        guard abs(date.timeIntervalSince(now)) <= window else {
            throw CloudKitError(
                .authenticationFailed,
                "the request date \(dateText) is more than \(Int(window)) s from the server's clock; sign it again")
        }
        let bodyHash = Data(SHA256.hash(data: body)).base64EncodedString()
        let message = Data("\(dateText):\(bodyHash):\(subpath)".utf8)
        guard let signatureData = Data(base64Encoded: signatureText),
            let signature = try? P256.Signing.ECDSASignature(derRepresentation: signatureData),
            let publicKey = try? P256.Signing.PublicKey(pemRepresentation: key.publicKeyPEM),
            publicKey.isValidSignature(signature, for: message)
        else {
            throw CloudKitError(
                .authenticationFailed,
                "the signature does not verify: sign base64(DER(ECDSA-P256-SHA256(\"{date}:{base64(sha256(body))}:{path}\")))")
        }
    }

    static func parseISO8601(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}
