import NimbusProtocol
import NimbusStore

/// Built-in accounts (email address and password): sign-up, email verification, sign-in
/// and password reset, for the JSON API and the sign-in page alike.
///
/// Answers never tell whether an address has an account: sign-up and "forgot password"
/// answer the same either way (the mail says the rest), and every failed sign-in (unknown
/// address, wrong password, address not verified yet) fails with the same answer, after the
/// same work (a decoy hash is checked for an unknown address) and counts alike towards the
/// throttle. Otherwise anyone could sign an address up with a password of their own and
/// learn from signing in whether it already had an account.
struct AccountService: Sendable {
    let store: any NimbusStorage
    let hasher: PasswordHasher
    let mail: any MailSender
    let throttle: SignInThrottle
    let clock: WallClock
    let settings: SignInSettings

    /// The answer to every failed sign-in, whatever failed.
    static let signInRefusal = CloudKitError(
        .authenticationFailed,
        "the email address or the password is wrong, or the address is not verified yet; check both, "
            + "enter the code mailed to you, or reset the password")

    /// The container's sign-in settings, refusing when built-in accounts are off.
    func requirePasswords(container: String) async throws -> ContainerSignInSettings {
        let settings = try await containerSettings(container)
        guard settings.passwords else {
            throw CloudKitError(
                .accessDenied,
                "built-in accounts are off for \(container); an operator turns them on with "
                    + "`nimbus container set-signin \(container) --passwords on`")
        }
        return settings
    }

    /// The container's settings; an unknown container is NOT_FOUND.
    func containerSettings(_ container: String) async throws -> ContainerSignInSettings {
        do {
            return try await store.signInSettings(container: container)
        } catch let error as AccountError {
            throw CloudKitError(.notFound, error.message)
        }
    }

    /// Registers an account waiting for verification and mails its code; for an address
    /// that has a verified account, mails a note instead. Answers the same either way.
    func signUp(email: String, password: String, container: String, links: SignInLinks) async throws {
        _ = try await requirePasswords(container: container)
        let email = try Self.checkedEmail(email)
        try PasswordHasher.check(password)
        let hash = try await hasher.hash(password)
        let login = try await store.registerPasswordLogin(email: email, passwordHash: hash, now: clock.nowMillis())
        if login.verifiedAt != nil {
            try await deliver(
                Mail(
                    to: email, subject: "Someone tried to sign up with your address",
                    body: "This address already has an account. If it was you, sign in at \(links.signIn), "
                        + "or reset your password. If it was not, ignore this mail."))
            return
        }
        let code = try await issueCode(.verifyEmail, userName: login.userName)
        try await deliver(
            Mail(
                to: email, subject: "Your verification code",
                body: "Your verification code is \(code). Enter it at \(links.verify(email: email, code: code)) "
                    + "within \(settings.codeLifetime.milliseconds / 60_000) minutes."))
    }

    /// Verifies an address with the code mailed to it.
    func verify(email: String, code: String, container: String) async throws {
        _ = try await requirePasswords(container: container)
        let (login, now) = try await useCode(
            code, .verifyEmail, email: email, orElse: "the code is wrong, used or expired; sign up again for a new one")
        try await store.markVerified(issuer: login.issuer, subject: login.subject, now: now)
    }

    /// Signs in with an address and a password, opening a session on `device`.
    func signIn(
        email: String, password: String, container: String, device: SessionDevice, address: String?
    ) async throws -> IssuedSession {
        _ = try await requirePasswords(container: container)
        let subject = UserLogin.emailSubject(email)
        try await throttle.check(account: subject, address: address)
        let login = try await store.login(issuer: UserLogin.emailIssuer, subject: subject)
        let matches = try await hasher.verify(password, hash: login?.passwordHash)
        guard matches, let login, login.verifiedAt != nil else {
            await throttle.recordFailure(account: subject, address: address)
            throw Self.signInRefusal
        }
        _ = try await store.signIntoContainer(userName: login.userName, container: container)
        return try await store.createSession(user: login.userName, container: container, device: device)
    }

    /// Mails a password reset code to an address that has an account, and a note saying it
    /// has none to one that has none: the answer, and how long it takes, are the same.
    func forgotPassword(email: String, container: String, links: SignInLinks) async throws {
        _ = try await requirePasswords(container: container)
        let email = try Self.checkedEmail(email)
        guard let login = try await store.login(issuer: UserLogin.emailIssuer, subject: UserLogin.emailSubject(email))
        else {
            try await deliver(
                Mail(
                    to: email, subject: "Your password reset request",
                    body: "Someone asked to reset the password of this address's account, but it has none. "
                        + "If it was you, sign up at \(links.signIn)/signup. If it was not, ignore this mail."))
            return
        }
        let code = try await issueCode(.resetPassword, userName: login.userName)
        try await deliver(
            Mail(
                to: email, subject: "Your password reset code",
                body: "Your password reset code is \(code) (valid \(settings.codeLifetime.milliseconds / 60_000) "
                    + "minutes). Send it with a new password to \(links.resetPasswordAPI). "
                    + "If you did not ask for it, ignore this mail."))
    }

    /// Sets a new password with a reset code; every session of the account is revoked.
    func resetPassword(email: String, code: String, newPassword: String, container: String) async throws
        -> [String]
    {
        _ = try await requirePasswords(container: container)
        try PasswordHasher.check(newPassword)
        let (login, now) = try await useCode(
            code, .resetPassword, email: email,
            orElse: "the code is wrong, used or expired; ask for a new one with accounts/password/forgot")
        let hash = try await hasher.hash(newPassword)
        try await store.setPassword(issuer: login.issuer, subject: login.subject, passwordHash: hash, now: now)
        var revoked: [String] = []
        for session in try await store.listSessions(container: nil, userName: login.userName) where !session.revoked {
            if try await store.revokeSession(id: session.id) { revoked.append(session.id) }
        }
        return revoked
    }

    /// Uses up a mailed code of the address's login, or refuses with AUTHENTICATION_FAILED
    /// and `reason` (an unknown address the same way); the login and the time it was used.
    private func useCode(_ code: String, _ purpose: OneTimeCodePurpose, email: String, orElse reason: String)
        async throws -> (login: UserLogin, now: Int64)
    {
        let refusal = CloudKitError(.authenticationFailed, reason)
        guard let login = try await store.login(issuer: UserLogin.emailIssuer, subject: UserLogin.emailSubject(email))
        else { throw refusal }
        let now = clock.nowMillis()
        guard
            try await store.consumeCode(hash: SessionToken.hash(code), purpose: purpose, userName: login.userName, now: now)
        else { throw refusal }
        return (login, now)
    }

    /// Hands `mail` to the mail sender; when that fails (the sender logs why), the client is
    /// told to try again later, the same way whatever the address.
    private func deliver(_ mail: Mail) async throws {
        do {
            try await self.mail.send(mail)
        } catch {
            throw CloudKitError(
                .tryAgainLater, "the server could not send mail just now; try again in a few minutes", retryAfter: 60)
        }
    }

    private func issueCode(_ purpose: OneTimeCodePurpose, userName: String) async throws -> String {
        let code = RandomToken.hex(bytes: 8)
        try await store.saveCode(
            hash: SessionToken.hash(code), purpose: purpose, userName: userName,
            expiresAt: clock.nowMillis() + settings.codeLifetime.milliseconds)
        return code
    }

    /// An address as accounts take it: 3 to 254 bytes, one `@` with something on each side,
    /// no spaces, control characters or angle brackets (SMTP could not carry it).
    static func checkedEmail(_ email: String) throws(CloudKitError) -> String {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard email.utf8.count >= 3, email.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty,
            !email.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F || $0 == "<" || $0 == ">" })
        else { throw .badRequest("'\(email.prefix(80))' is not an email address (name@domain)") }
        return email
    }
}

/// The URLs mails point to, on the origin the client reached the server at.
struct SignInLinks: Sendable {
    var origin: String
    var container: String
    var environment: ContainerEnvironment

    var signIn: String { "\(origin)/signin/\(container)/\(environment.rawValue)" }

    func verify(email: String, code: String) -> String {
        "\(signIn)/verify?email=\(FormText.percentEncoded(email))&code=\(code)"
    }

    var resetPasswordAPI: String { "\(origin)/database/1/\(container)/\(environment.rawValue)/accounts/password/reset" }
}
