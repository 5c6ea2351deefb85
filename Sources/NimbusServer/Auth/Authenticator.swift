import Crypto
import Foundation
import NimbusProtocol
import NimbusStore

/// Authenticates CloudKit Web Services requests: API tokens, web auth tokens and
/// server-to-server keys (ECDSA P-256 signatures over date, body hash and path, or path
/// and query string as sent: see ``SignatureCheck``).
struct Authenticator: Sendable {
    let accounts: any AccountStore
    let signatureWindow: Duration
    /// The server's clock, which a signed request's date must be within ``signatureWindow`` of.
    let clock: WallClock
    /// When sessions expire and when their use is recorded.
    var sessionPolicy = SessionPolicy(SignInSettings())
    /// Where a session's use is recorded (`nil`: never).
    var sessions: (any SessionStore)? = nil

    struct Credentials: Sendable {
        var apiToken: String?
        var webAuthToken: String?
        var keyID: String?
        var signatureDate: String?
        var signature: String?
        var deviceID: String?
    }

    /// Authenticates a request whose body is at hand (the push channel's upgrade has none).
    /// - Parameters:
    ///   - subpath: the URL path the signature covers (`/database/1/…/records/query`).
    ///   - query: the request's query string as sent, without its `?` (`nil`: none).
    ///   - body: the body bytes exactly as received.
    func authenticate(
        _ credentials: Credentials, container: String, environment: ContainerEnvironment, scope: DatabaseScope,
        subpath: String, query: String? = nil, body: [UInt8]
    ) async throws -> RequestIdentity {
        try await authenticateHead(
            credentials, container: container, environment: environment, scope: scope, subpath: subpath, query: query
        ).verified(body: body)
    }

    /// Authenticates a request from its URL and headers alone, before its body is read: tokens
    /// completely; a server-to-server request as far as it goes without the body (the headers
    /// are there, the key exists, is not revoked and is the container's, the date is within the
    /// window, the signature is well-formed), leaving the signature over the body to
    /// ``Pending/verified(body:)``.
    func authenticateHead(
        _ credentials: Credentials, container: String, environment: ContainerEnvironment, scope: DatabaseScope,
        subpath: String, query: String?
    ) async throws -> Pending {
        var identity = RequestIdentity(
            container: container, environment: environment, scope: scope, user: nil, serverKeyID: nil,
            deviceID: try Self.checkedDeviceID(credentials.deviceID))

        if let keyID = credentials.keyID {
            let check = try await signatureCheck(
                credentials, keyID: keyID, container: container, signedPaths: SignatureCheck.signedPaths(subpath, query: query))
            guard scope == .public else {
                throw CloudKitError(
                    .accessDenied, "server-to-server keys reach the public database only; use a web auth token for private data")
            }
            identity.serverKeyID = keyID
            return Pending(identity: identity, signature: check)
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
            if let session = lookup.session {
                try await checkSession(session)
                identity.sessionID = session.id
            }
            identity.user = user
        }
        if scope != .public && identity.user == nil {
            var error = CloudKitError(
                .authenticationRequired,
                "the \(scope.rawValue) database needs a signed-in user: pass ckWebAuthToken")
            // Made absolute by the responder, and only when the container has a sign-in page.
            error.redirectURL = SignInPage.path(container: container, environment: environment)
            throw error
        }
        return Pending(identity: identity, signature: nil)
    }

    /// Refuses an expired session; records the use of one not seen for a while.
    private func checkSession(_ session: SessionStamp) async throws {
        let now = clock.nowMillis()
        if sessionPolicy.isExpired(lastSeenAt: session.lastSeenAt, now: now) {
            throw CloudKitError(
                .authenticationFailed,
                "the ckWebAuthToken's session expired after \(sessionPolicy.idleDays) days unused; sign in again")
        }
        if sessionPolicy.needsTouch(lastSeenAt: session.lastSeenAt, now: now) {
            try await sessions?.touchSession(id: session.id, at: now)
        }
    }

    /// A request authenticated from its URL and headers; a signed one still needs its body.
    struct Pending: Sendable {
        var identity: RequestIdentity
        /// The signature over the body, for a server-to-server request.
        var signature: SignatureCheck?

        /// The identity, once the body is known to be the one signed.
        func verified(body: [UInt8]) throws(CloudKitError) -> RequestIdentity {
            try signature?.verify(body: body)
            return identity
        }
    }

    /// What a server-to-server signature covers, but for the body: `{date}:{base64(sha256(body))}:{path}`,
    /// where `{path}` is the URL path alone (Apple's documented form) or the path with the
    /// query string exactly as sent (`{path}?{query}`, as CloudKit JS signs its requests,
    /// which carry `ckjsBuildVersion`, `ckjsVersion` and `clientId`). Nothing else: not a
    /// decoded, reordered or partial query.
    struct SignatureCheck: Sendable {
        var dateText: String
        /// The forms of the request's path a signature may cover (``signedPaths(_:query:)``).
        var signedPaths: [String]
        var signatureDER: Data
        var publicKeyPEM: String

        static let refusal = CloudKitError(
            .authenticationFailed,
            "the signature does not verify: sign base64(DER(ECDSA-P256-SHA256(\"{date}:{base64(sha256(body))}:{path}\"))), "
                + "{path} being the URL path, or the path and its query string as sent")

        /// The path alone, and the path with its query string as sent when it has one.
        static func signedPaths(_ path: String, query: String?) -> [String] {
            guard let query else { return [path] }
            return [path, path + "?" + query]
        }

        /// Checks the signature over `body`. A request without a body may also be signed with
        /// an empty body-hash field (`{date}::{path}`), as some CloudKit clients sign GETs; the
        /// date and path are signed either way.
        func verify(body: [UInt8]) throws(CloudKitError) {
            guard let signature = try? P256.Signing.ECDSASignature(derRepresentation: signatureDER),
                let publicKey = try? P256.Signing.PublicKey(pemRepresentation: publicKeyPEM)
            else { throw Self.refusal }
            let bodyHash = Data(SHA256.hash(data: body)).base64EncodedString()
            for path in signedPaths {
                if publicKey.isValidSignature(signature, for: Data("\(dateText):\(bodyHash):\(path)".utf8)) { return }
                if body.isEmpty, publicKey.isValidSignature(signature, for: Data("\(dateText)::\(path)".utf8)) { return }
            }
            throw Self.refusal
        }
    }

    /// Checks a server-to-server request's headers, key and date; the signature's bytes are
    /// checked over the body later.
    private func signatureCheck(
        _ credentials: Credentials, keyID: String, container: String, signedPaths: [String]
    ) async throws -> SignatureCheck {
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
        guard abs(date.timeIntervalSince(clock.now())) <= window else {
            throw CloudKitError(
                .authenticationFailed,
                "the request date \(dateText) is more than \(Int(window)) s from the server's clock; sign it again")
        }
        // A signature that cannot verify whatever the body: refused before the body is read.
        guard let signatureDER = Data(base64Encoded: signatureText),
            (try? P256.Signing.ECDSASignature(derRepresentation: signatureDER)) != nil,
            (try? P256.Signing.PublicKey(pemRepresentation: key.publicKeyPEM)) != nil
        else { throw SignatureCheck.refusal }
        return SignatureCheck(
            dateText: dateText, signedPaths: signedPaths, signatureDER: signatureDER, publicKeyPEM: key.publicKeyPEM)
    }

    /// The device a request names, checked: 1 to 255 bytes without control characters (it is
    /// stored in every record the request writes); an empty one names no device.
    static func checkedDeviceID(_ value: String?) throws(CloudKitError) -> String? {
        guard let value, !value.isEmpty else { return nil }
        guard value.utf8.count <= 255, !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw .badRequest(
                "the device ID (X-Nimbus-Device-ID or deviceID) must be 1 to 255 bytes without control characters")
        }
        return value
    }

    static func parseISO8601(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}
