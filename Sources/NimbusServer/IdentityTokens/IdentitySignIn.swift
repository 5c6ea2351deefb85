import NimbusProtocol
import NimbusStore

/// Signing in with an identity provider's ID token: the token is verified
/// (``IdentityTokenVerifier``) against the issuers the container accepts, used once, linked
/// to a Nimbus user (the same user as a built-in account with the address the issuer
/// vouches for) and exchanged for a session on the device.
struct IdentitySignIn: Sendable {
    let store: any NimbusStorage
    let verifier: IdentityTokenVerifier
    let throttle: SignInThrottle
    let clock: WallClock

    func signIn(
        idToken: String, nonce: String?, container: String, device: SessionDevice, address: String?
    ) async throws -> IssuedSession {
        // Failures are throttled per client address (an ID token names no account until verified).
        let bucket = "id-token " + (address ?? "-")
        try await throttle.check(account: bucket, address: address)
        let issuers: [IdentityIssuer]
        do {
            issuers = try await store.identityIssuers(container: container)
        } catch let error as AccountError {
            throw CloudKitError(.notFound, error.message)
        }
        guard !issuers.isEmpty else {
            throw CloudKitError(
                .accessDenied,
                "\(container) accepts no identity tokens; an operator adds an issuer with "
                    + "`nimbus container issuer add \(container) --issuer URL --audience CLIENT_ID`")
        }
        let identity: VerifiedIdentity
        switch await verification(idToken, issuers: issuers, nonce: nonce) {
        case .success(let verified):
            identity = verified
        case .failure(let error):
            if error.code == .authenticationFailed { await throttle.recordFailure(account: bucket, address: address) }
            throw error
        }
        let now = clock.nowMillis()
        guard try await store.useIdentityToken(id: identity.tokenID, expiresAt: identity.expiresAt, now: now) else {
            await throttle.recordFailure(account: bucket, address: address)
            throw CloudKitError(
                .authenticationFailed,
                "this ID token was already exchanged for a session; get a new one from the identity provider")
        }
        let login = try await store.linkIdentityLogin(
            issuer: identity.issuer, subject: identity.subject, email: identity.email,
            verifiedEmail: identity.emailVerified ? identity.email : nil, now: now)
        _ = try await store.signIntoContainer(userName: login.userName, container: container)
        return try await store.createSession(user: login.userName, container: container, device: device)
    }

    private func verification(_ token: String, issuers: [IdentityIssuer], nonce: String?) async -> Result<VerifiedIdentity, CloudKitError> {
        do {
            return .success(try await verifier.verify(token, issuers: issuers, nonce: nonce))
        } catch {
            return .failure(error)
        }
    }
}
