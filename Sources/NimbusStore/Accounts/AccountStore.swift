/// Provisioning and authentication data: containers, users, API and web auth tokens,
/// server-to-server keys. Written by the `nimbus` CLI (also while the server runs) and read
/// by the server on every request. A revocation takes effect at once through the store that
/// made it; a store may keep lookups briefly (``TokenLookupCache``) and hear other processes'
/// changes late, by a bound each store documents (``lookUpTokens(apiToken:webAuthToken:)``).
public protocol AccountStore: Sendable {
    /// Creates a container and its first API token. Fails if it exists.
    func createContainer(_ identifier: String) async throws -> IssuedToken
    func listContainers() async throws -> [String]

    /// Issues another API token for a container.
    func createAPIToken(container: String) async throws -> IssuedToken

    /// Creates the user if new, gives them a record name in the container (different in each
    /// container, as in CloudKit) and issues a web auth token: a session on the device
    /// ``SessionDevice/operatorIssued``.
    func createUser(
        name: String, email: String?, firstName: String?, lastName: String?, container: String
    ) async throws -> IssuedToken

    /// API tokens and sessions, in order of issue. A session is listed with its ID as
    /// ``IssuedToken/token``: its token is stored only as a hash.
    func listTokens(container: String?) async throws -> [IssuedToken]
    /// Revokes an API token, or the session of a web auth token or session ID; `false` if
    /// there was no such active token.
    func revokeToken(_ token: String) async throws -> Bool

    func addServerKey(keyID: String, container: String, publicKeyPEM: String) async throws
    func listServerKeys(container: String?) async throws -> [ServerKey]
    func revokeServerKey(keyID: String) async throws -> Bool

    /// The container an active API token belongs to.
    func container(forAPIToken token: String) async throws -> String?
    /// The user an active web auth token identifies.
    func user(forWebAuthToken token: String) async throws -> UserIdentity?
    /// Both token lookups of a request in one database access: the container of an active
    /// API token and, when `webAuthToken` is given, the user of that active web auth token.
    /// The same answers as ``container(forAPIToken:)`` and ``user(forWebAuthToken:)``.
    func lookUpTokens(apiToken: String, webAuthToken: String?) async throws -> TokenLookup
    /// An active server-to-server key.
    func serverKey(id: String) async throws -> ServerKey?
    /// A user by record name within a container.
    func user(recordName: String, container: String) async throws -> UserIdentity?

    /// The identity of the user with account name `name` in `container`, or `nil` when they
    /// are not signed into it.
    func user(named name: String, container: String) async throws -> UserIdentity?

    /// Opts a user in to discovery in a container, or out of it (CloudKit's user
    /// discoverability permission, which is per container): whether the container's other
    /// users can find them by email address or user record name. New identities are not
    /// discoverable. Returns the user's identity in the container; fails with an
    /// ``AccountError`` if the user was never signed into it (``setDiscoverable(_:userName:container:)``
    /// says so for every engine).
    ///
    /// An engine sets the flag and returns the identity, or `nil` when the user has no identity
    /// in the container.
    func updateDiscoverable(_ discoverable: Bool, userName: String, container: String) async throws -> UserIdentity?

    /// The users of `container` who opted in to discovery and have one of `emailAddresses`
    /// (compared by ``UserIdentity/emailKey(_:)``: ignoring ASCII case, as SQL's `lower` does)
    /// or one of `recordNames`, each once, in no particular order. A user who did not opt in
    /// is never returned, whatever matched.
    func discoverableUsers(
        emailAddresses: [String], recordNames: [String], container: String
    ) async throws -> [UserIdentity]
}

/// What ``AccountStore/lookUpTokens(apiToken:webAuthToken:)`` found.
public struct TokenLookup: Sendable, Equatable {
    /// The API token's container, `nil` if the token is unknown or revoked.
    public var container: String?
    /// The web auth token's user, `nil` if none was asked for or it is unknown or revoked.
    public var user: UserIdentity?
    /// The web auth token's session: its ID and when it was last seen.
    public var session: SessionStamp?

    public init(container: String?, user: UserIdentity?, session: SessionStamp? = nil) {
        self.container = container
        self.user = user
        self.session = session
    }
}

/// Which session a web auth token opens and when it was last used.
public struct SessionStamp: Sendable, Equatable {
    public var id: String
    public var lastSeenAt: Int64

    public init(id: String, lastSeenAt: Int64) {
        self.id = id
        self.lastSeenAt = lastSeenAt
    }
}

extension AccountStore {
    /// Opts a user in to discovery in a container, or out of it (see
    /// ``updateDiscoverable(_:userName:container:)``); fails with ``AccountError/notSignedIn(_:container:)``
    /// if the user was never signed into it.
    public func setDiscoverable(_ discoverable: Bool, userName: String, container: String) async throws -> UserIdentity {
        guard let user = try await updateDiscoverable(discoverable, userName: userName, container: container) else {
            throw AccountError.notSignedIn(userName, container: container)
        }
        return user
    }

    /// Two separate lookups; engines override this to make one database access.
    public func lookUpTokens(apiToken: String, webAuthToken: String?) async throws -> TokenLookup {
        let container = try await container(forAPIToken: apiToken)
        let user = try await webAuthToken.asyncMap { try await self.user(forWebAuthToken: $0) } ?? nil
        return TokenLookup(container: container, user: user)
    }
}

extension Optional {
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}

/// A token the store issued.
public struct IssuedToken: Sendable, Equatable {
    public enum Kind: String, Sendable { case api, webAuth = "web" }
    public var token: String
    public var kind: Kind
    public var container: String
    /// For web auth tokens: the user.
    public var user: UserIdentity?
    public var createdAt: Int64
    public var revoked: Bool
    /// For web auth tokens: the session the token opens.
    public var sessionID: String?

    public init(
        token: String, kind: Kind, container: String, user: UserIdentity?, createdAt: Int64, revoked: Bool,
        sessionID: String? = nil
    ) {
        self.token = token
        self.kind = kind
        self.container = container
        self.user = user
        self.createdAt = createdAt
        self.revoked = revoked
        self.sessionID = sessionID
    }
}

/// A user as seen from one container.
public struct UserIdentity: Sendable, Equatable {
    /// The account name given at creation (like an Apple ID); the same in every container.
    public var name: String
    /// The user's record name in this container.
    public var recordName: String
    public var container: String
    public var email: String?
    public var firstName: String?
    public var lastName: String?

    public init(
        name: String, recordName: String, container: String, email: String?, firstName: String?, lastName: String?
    ) {
        self.name = name
        self.recordName = recordName
        self.container = container
        self.email = email
        self.firstName = firstName
        self.lastName = lastName
    }
}

extension UserIdentity {
    /// An email address as discovery compares it: ASCII letters lowercased, everything else as
    /// is (what SQLite's `lower()` and PostgreSQL's `lower()` under `COLLATE "C"` do).
    public static func emailKey(_ email: String) -> String {
        String(String.UnicodeScalarView(email.unicodeScalars.map { scalar in
            ("A"..."Z").contains(scalar) ? Unicode.Scalar(scalar.value + 32)! : scalar
        }))
    }

    /// What a discovery request looks users up by: its email addresses as discovery compares
    /// them (``emailKey(_:)``) and its record names; `nil` when it names no one, which
    /// discovers nobody without a read.
    public static func discoveryKeys(emailAddresses: [String], recordNames: [String])
        -> (emails: [String], recordNames: [String])?
    {
        guard !emailAddresses.isEmpty || !recordNames.isEmpty else { return nil }
        return (emailAddresses.map(emailKey), recordNames)
    }
}

/// A server-to-server key: its ID, container and public key.
public struct ServerKey: Sendable, Equatable {
    public var keyID: String
    public var container: String
    public var publicKeyPEM: String
    public var createdAt: Int64
    public var revoked: Bool

    public init(keyID: String, container: String, publicKeyPEM: String, createdAt: Int64, revoked: Bool) {
        self.keyID = keyID
        self.container = container
        self.publicKeyPEM = publicKeyPEM
        self.createdAt = createdAt
        self.revoked = revoked
    }
}

/// Provisioning errors with what to do about them.
public struct AccountError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }

    /// The user was never signed into the container (every engine says it the same way).
    public static func notSignedIn(_ userName: String, container: String) -> AccountError {
        AccountError(
            "user \(userName) is not signed into \(container); create them there with "
                + "`nimbus user create \(userName) --container \(container)`")
    }
}
