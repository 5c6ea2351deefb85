import Foundation
import NimbusProtocol

/// A container's signed-in user: signing in (built-in accounts, identity provider ID tokens,
/// the server's sign-in page in a web view), refreshing the token, signing out, the user's
/// sessions, and a stream of account changes.
///
/// ```swift
/// let anonymous = Container(
///     identifier: "iCloud.com.example.reader", baseURL: URL(string: "https://sync.example.com")!,
///     credentials: .apiToken(apiToken))
/// let account = try await Account(container: anonymous, sessionStore: KeychainSessionStore())
/// Task { for await change in await account.changes() { … } }
/// if await account.userRecordName == nil {
///     try await account.signIn(email: "ada@example.com", password: password, deviceName: "Ada's iPhone")
/// }
/// let database = await account.container.privateCloudDatabase
/// ```
///
/// Signing in while someone is signed in replaces the session: ``AccountChange/switched(from:to:)``
/// when it is another user, and the replaced session is revoked on the server.
///
/// ``container`` carries the signed-in user's token. A request of it that the server answers
/// with AUTHENTICATION_FAILED (the session was revoked from another device, or expired) signs
/// the account out: the session is forgotten and ``AccountChange/signedOut(userRecordName:)``
/// is reported.
public actor Account {
    /// The container without a user: its API token only.
    public nonisolated let anonymousContainer: Container
    private let sessionStore: any AccountSessionStore
    /// The signed-in user's session, or `nil` when nobody is signed in.
    public private(set) var session: AccountSession?
    private var subscribers: [UUID: AsyncStream<AccountChange>.Continuation] = [:]

    /// - Parameters:
    ///   - container: the container, with an API token (``Credentials/apiToken(_:webAuthToken:)``;
    ///     a web auth token in it is ignored).
    ///   - sessionStore: where the session is kept across launches; the one it holds is
    ///     restored.
    public init(container: Container, sessionStore: any AccountSessionStore = InMemorySessionStore()) async throws {
        self.anonymousContainer = container.with(credentials: container.credentials.withWebAuthToken(nil))
        self.sessionStore = sessionStore
        self.session = try await sessionStore.load()
    }

    /// The signed-in user's record name, or `nil`.
    public var userRecordName: String? { session?.userRecordName }

    /// The container with the signed-in user's credentials (the API token only when nobody
    /// is signed in). Take it again after the account changes: a container keeps the token
    /// it was made with.
    public var container: Container { makeContainer(for: session) }

    /// A stream of the account's changes from now on; each call returns a new subscriber.
    public func changes() -> AsyncStream<AccountChange> {
        subscribe().changes
    }

    /// The current session and a stream of changes after it, taken together (so no change
    /// falls between reading the state and subscribing).
    public func subscribe() -> (session: AccountSession?, container: Container, changes: AsyncStream<AccountChange>) {
        let (stream, continuation) = AsyncStream<AccountChange>.makeStream(bufferingPolicy: .unbounded)
        let id = UUID()
        subscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribe(id) }
        }
        return (session, container, stream)
    }

    private func unsubscribe(_ id: UUID) { subscribers[id] = nil }

    // MARK: - Built-in accounts

    /// Registers a built-in account: the server mails a code to verify the address with
    /// ``verify(email:code:)``. The answer is the same whether the address is new or not.
    public func signUp(email: String, password: String) async throws {
        _ = try await entry("accounts/signup", ["email": .string(email), "password": .string(password)])
    }

    /// Verifies a built-in account's address with the code the server mailed.
    public func verify(email: String, code: String) async throws {
        _ = try await entry("accounts/verify", ["email": .string(email), "code": .string(code)])
    }

    /// Signs in with a built-in account's address and password.
    /// - Parameters:
    ///   - deviceName: names the session in ``sessions()`` ("Ada's iPhone").
    ///   - platform: names the platform in ``sessions()`` ("iOS").
    /// - Returns: the user's record name.
    @discardableResult
    public func signIn(email: String, password: String, deviceName: String? = nil, platform: String? = nil)
        async throws -> String
    {
        var body: [String: JSON] = ["email": .string(email), "password": .string(password)]
        body["deviceName"] = deviceName.map { JSON.string($0) }
        body["platform"] = platform.map { JSON.string($0) }
        return try await adopt(try await entry("accounts/signin", body))
    }

    /// Signs in with an identity provider's ID token (Sign in with Apple, Google, any OpenID
    /// Connect issuer the container trusts), exchanged for a session.
    /// - Parameter nonce: the nonce the token was requested with, when there was one.
    /// - Returns: the user's record name.
    @discardableResult
    public func signIn(idToken: String, nonce: String? = nil, deviceName: String? = nil, platform: String? = nil)
        async throws -> String
    {
        var body: [String: JSON] = ["idToken": .string(idToken)]
        body["nonce"] = nonce.map { JSON.string($0) }
        body["deviceName"] = deviceName.map { JSON.string($0) }
        body["platform"] = platform.map { JSON.string($0) }
        return try await adopt(try await entry("accounts/signin/idtoken", body))
    }

    // MARK: - The web flow

    /// The server's sign-in page, for a web view: once the user signs in there, the page
    /// redirects to `callbackURL` with the token in its query (`ckWebAuthToken`). Hand that
    /// URL to ``completeWebSignIn(callbackURL:)``. The callback's origin must be one the
    /// container allows (`nimbus container set-signin C --redirect-origin …`).
    public nonisolated func webSignInURL(callbackURL: URL) -> URL {
        let container = anonymousContainer
        var components = URLComponents(url: container.baseURL, resolvingAgainstBaseURL: false) ?? URLComponents()
        var path = components.path
        while path.hasSuffix("/") { path.removeLast() }
        components.path = path + "/signin/\(container.identifier)/\(container.environment.rawValue)"
        components.queryItems = [URLQueryItem(name: "redirect", value: callbackURL.absoluteString)]
        return components.url ?? container.baseURL
    }

    /// Finishes the web flow: reads the token the sign-in page's redirect carries and signs
    /// in with it.
    /// - Returns: the user's record name.
    @discardableResult
    public func completeWebSignIn(callbackURL: URL) async throws -> String {
        guard
            let token = URLComponents(url: callbackURL, resolvingAgainstBaseURL: false)?.queryItems?
                .first(where: { $0.name == "ckWebAuthToken" })?.value, !token.isEmpty
        else {
            throw NimbusError(.invalidArguments, "the callback URL carries no ckWebAuthToken")
        }
        let pending = AccountSession(webAuthToken: token, sessionID: "", userRecordName: "")
        let database = makeContainer(for: pending, watched: false).publicCloudDatabase
        let user = try await database.send("users/current", method: .get, body: nil)
        guard let name = user["userRecordName"]?.string else {
            throw NimbusError.malformedResponse("users/current returned no userRecordName")
        }
        let sessions = try await database.send("sessions/list", method: .get, body: nil)
        let current = sessions["sessions"]?.array?.first { $0["current"]?.bool == true }
        return try await adopt(
            AccountSession(webAuthToken: token, sessionID: current?["sessionID"]?.string ?? "", userRecordName: name))
    }

    // MARK: - The session

    /// Replaces the session's token with a new one (`sessions/refresh`); the old one stops
    /// working at once. Reports ``AccountChange/tokenRefreshed(userRecordName:)``.
    public func refresh() async throws {
        guard let current = session else { throw NimbusError(.notAuthenticated, "nobody is signed in") }
        let answer = try await makeContainer(for: current, watched: true).publicCloudDatabase.send("sessions/refresh", body: .object([:]))
        guard let token = answer["ckWebAuthToken"]?.string else {
            throw NimbusError.malformedResponse("sessions/refresh returned no ckWebAuthToken")
        }
        // Signed out or switched meanwhile: the new token is not this account's any more.
        guard session == current else { return }
        var refreshed = current
        refreshed.webAuthToken = token
        refreshed.sessionID = answer["sessionID"]?.string ?? current.sessionID
        try await sessionStore.save(refreshed)
        session = refreshed
        emit(.tokenRefreshed(userRecordName: refreshed.userRecordName))
    }

    /// Signs out: the session is forgotten here (``AccountChange/signedOut(userRecordName:)``
    /// is reported at once), then revoked on the server. A failure to reach the server is
    /// thrown after the local sign-out; the session then lapses on its own (idle expiry) or
    /// can be revoked from another device.
    public func signOut() async throws {
        guard let current = session else { return }
        try await forget(current)
        do {
            try await revokeOnServer([current.sessionID], as: current)
        } catch let error as NimbusError where error.code == .notAuthenticated {
            // Already revoked or expired: signed out all the same.
        }
    }

    /// The signed-in user's live sessions in the container, oldest first.
    public func sessions() async throws -> [SessionInfo] {
        guard let current = session else { throw NimbusError(.notAuthenticated, "nobody is signed in") }
        let answer = try await makeContainer(for: current, watched: true).publicCloudDatabase.send(
            "sessions/list", method: .get, body: nil)
        return (answer["sessions"]?.array ?? []).compactMap { item in
            guard let id = item["sessionID"]?.string else { return nil }
            return SessionInfo(
                sessionID: id, deviceName: item["deviceName"]?.string ?? "", platform: item["platform"]?.string ?? "",
                created: item["created"]?.int64 ?? 0, lastSeen: item["lastSeen"]?.int64 ?? 0,
                isCurrent: item["current"]?.bool ?? false)
        }
    }

    /// Revokes one of the signed-in user's sessions (another device's; this one's signs out).
    public func revoke(sessionID: String) async throws {
        guard let current = session else { throw NimbusError(.notAuthenticated, "nobody is signed in") }
        if sessionID == current.sessionID { return try await signOut() }
        try await revokeOnServer([sessionID], as: current)
    }

    /// A request carrying `token` was refused as AUTHENTICATION_FAILED: if it is still the
    /// session's, the session is gone on the server (revoked, expired); sign out here.
    func sessionRefused(token: String) async {
        guard let current = session, current.webAuthToken == token else { return }
        try? await forget(current)
    }

    // MARK: - Internals

    private func revokeOnServer(_ ids: [String], as session: AccountSession) async throws {
        let answer = try await makeContainer(for: session, watched: false).publicCloudDatabase.send(
            "sessions/revoke", body: .object(["sessionIDs": .array(ids.map { JSON.string($0) })]))
        if let refused = answer["sessions"]?.array?.first(where: { $0["revoked"]?.bool != true }),
            let code = refused["serverErrorCode"]?.string
        {
            throw NimbusError(.unknownItem, "sessions/revoke: \(code) \(refused["reason"]?.string ?? "")")
        }
    }

    private func forget(_ current: AccountSession) async throws {
        session = nil
        emit(.signedOut(userRecordName: current.userRecordName))
        try await sessionStore.save(nil)
    }

    /// Takes the session an `accounts/signin*` answer opened.
    private func adopt(_ answer: JSON) async throws -> String {
        guard let token = answer["ckWebAuthToken"]?.string, let name = answer["userRecordName"]?.string else {
            throw NimbusError.malformedResponse("the sign-in answer carries no ckWebAuthToken or userRecordName")
        }
        return try await adopt(
            AccountSession(webAuthToken: token, sessionID: answer["sessionID"]?.string ?? "", userRecordName: name))
    }

    /// Makes `new` the session. A session it replaces (another user's, or an older one of
    /// the same user) is revoked on the server, best effort: a failure leaves it to lapse.
    private func adopt(_ new: AccountSession) async throws -> String {
        let previous = session
        try await sessionStore.save(new)
        session = new
        if let previous, previous.userRecordName != new.userRecordName {
            emit(.switched(from: previous.userRecordName, to: new.userRecordName))
        } else {
            emit(.signedIn(userRecordName: new.userRecordName))
        }
        if let previous, !previous.sessionID.isEmpty, previous.sessionID != new.sessionID {
            try? await revokeOnServer([previous.sessionID], as: previous)
        }
        return new.userRecordName
    }

    private func entry(_ operation: String, _ body: [String: JSON]) async throws -> JSON {
        try await anonymousContainer.publicCloudDatabase.send(operation, body: .object(body))
    }

    private func emit(_ change: AccountChange) {
        for continuation in subscribers.values { continuation.yield(change) }
    }

    /// The container carrying `session`'s token; `watched`: requests the server refuses as
    /// AUTHENTICATION_FAILED sign the account out.
    private func makeContainer(for session: AccountSession?, watched: Bool = true) -> Container {
        guard let session else { return anonymousContainer }
        let base = anonymousContainer
        let transport: any Transport =
            watched ? SessionWatchingTransport(base: base.transport, token: session.webAuthToken, account: self) : base.transport
        var container = Container(
            identifier: base.identifier, environment: base.environment, baseURL: base.baseURL,
            credentials: base.credentials.withWebAuthToken(session.webAuthToken), deviceID: base.deviceID,
            transport: transport, assetTransport: base.assetTransport, requestTimeout: base.requestTimeout)
        container.assetTimeout = base.assetTimeout
        return container
    }
}

/// Passes requests on and tells the account when the server refuses its session's token
/// (401 AUTHENTICATION_FAILED).
struct SessionWatchingTransport: Transport {
    let base: any Transport
    let token: String
    weak var account: Account?

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await base.send(request)
        if response.status == 401,
            (try? JSON.parse(response.body))?["serverErrorCode"]?.string ?? "AUTHENTICATION_FAILED" == "AUTHENTICATION_FAILED"
        {
            await account?.sessionRefused(token: token)
        }
        return response
    }
}
