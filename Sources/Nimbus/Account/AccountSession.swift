import Foundation

/// A signed-in user's session: the web auth token requests carry, the session's ID on the
/// server (to revoke it) and the user's record name in the container.
public struct AccountSession: Sendable, Hashable, Codable {
    /// The `ckWebAuthToken` requests carry. A secret: store it where the platform keeps secrets.
    public var webAuthToken: String
    /// The session's ID on the server (what `sessions/list` and `sessions/revoke` name).
    public var sessionID: String
    /// The signed-in user's record name in the container.
    public var userRecordName: String

    public init(webAuthToken: String, sessionID: String, userRecordName: String) {
        self.webAuthToken = webAuthToken
        self.sessionID = sessionID
        self.userRecordName = userRecordName
    }
}

/// What an ``Account`` reports when its signed-in user changes.
public enum AccountChange: Sendable, Hashable {
    /// A user signed in with nobody signed in before (or the same user signed in again).
    case signedIn(userRecordName: String)
    /// The user signed out, or the server refused the session (revoked elsewhere, expired):
    /// requests carry no user token any more.
    case signedOut(userRecordName: String)
    /// Another user signed in over a signed-in one.
    case switched(from: String, to: String)
    /// The session's token was replaced (``Account/refresh()``); the user is the same.
    case tokenRefreshed(userRecordName: String)
}

/// Where an ``Account`` keeps its session across launches. The default,
/// ``InMemorySessionStore``, forgets it when the process ends; an app keeps it in the
/// keychain, a command line tool in a file only its user can read.
///
/// ```swift
/// struct KeychainSessionStore: AccountSessionStore {
///     func load() async throws -> AccountSession? { try Keychain.read("nimbus-session") }
///     func save(_ session: AccountSession?) async throws { try Keychain.write("nimbus-session", session) }
/// }
/// let account = try await Account(container: container, sessionStore: KeychainSessionStore())
/// ```
public protocol AccountSessionStore: Sendable {
    /// The stored session, or `nil` when nobody is signed in.
    func load() async throws -> AccountSession?
    /// Replaces the stored session (`nil`: forget it).
    func save(_ session: AccountSession?) async throws
}

/// Keeps the session in memory only (the default of an ``Account``).
///
/// ```swift
/// let account = try await Account(container: container, sessionStore: InMemorySessionStore())
/// ```
public actor InMemorySessionStore: AccountSessionStore {
    private var session: AccountSession?

    public init(_ session: AccountSession? = nil) {
        self.session = session
    }

    public func load() async throws -> AccountSession? { session }
    public func save(_ session: AccountSession?) async throws { self.session = session }
}

/// Keeps the session as JSON in a file (created readable by its owner only), for command
/// line tools.
///
/// ```swift
/// let store = FileSessionStore(path: "\(stateDirectory)/session.json")
/// let account = try await Account(container: container, sessionStore: store)
/// ```
public struct FileSessionStore: AccountSessionStore {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    public func load() async throws -> AccountSession? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return try JSONDecoder().decode(AccountSession.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    public func save(_ session: AccountSession?) async throws {
        guard let session else {
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
            return
        }
        let data = try JSONEncoder().encode(session)
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        try data.write(to: URL(fileURLWithPath: path))
    }
}

/// One of the signed-in user's sessions, as ``Account/sessions()`` lists them.
public struct SessionInfo: Sendable, Hashable {
    public var sessionID: String
    public var deviceName: String
    public var platform: String
    /// When the session was opened and last used (milliseconds since 1970, the server's clock).
    public var created: Int64
    public var lastSeen: Int64
    /// Whether this is the account's own session.
    public var isCurrent: Bool
}
