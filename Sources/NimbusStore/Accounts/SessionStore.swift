import Crypto
import Foundation

/// Sessions: web auth tokens bound to a user, a container and a device.
///
/// A session is opened once an identity is established — by an operator (`nimbus user
/// create`), by a built-in account's email and password, or (later) by an exchanged OIDC
/// ID token — always through ``createSession(user:container:device:)``. Its token is handed
/// out once and stored only as a SHA-256 hash (``SessionToken/hash(_:)``); the session's
/// ``Session/id`` names it for listing and revocation.
public protocol SessionStore: Sendable {
    /// Opens a session for a user already signed into `container` (who has a record name
    /// there) and returns it with its token, the only time the token is known.
    func createSession(user userName: String, container: String, device: SessionDevice) async throws -> IssuedSession

    /// The unrevoked session a token opens, with its user's identity; `nil` for an unknown or
    /// revoked token. Whether it is too idle is the caller's decision (``Session/lastSeenAt``).
    func session(forToken token: String) async throws -> Session?

    /// Records that a session was used at `millis`.
    func touchSession(id: String, at millis: Int64) async throws

    /// Gives an unrevoked session a new token, making the old one worthless; `nil` if there
    /// is no such unrevoked session. The session keeps its ID and is seen at `millis`.
    func refreshSession(id: String, at millis: Int64) async throws -> IssuedSession?

    /// Sessions, oldest first: of a container, of a user (account name), or all.
    func listSessions(container: String?, userName: String?) async throws -> [Session]

    /// Revokes a session; `false` if there was no such unrevoked session.
    func revokeSession(id: String) async throws -> Bool

    /// Those of `ids` that name unrevoked sessions seen at or after `seenSince`.
    func liveSessionIDs(_ ids: [String], seenSince: Int64) async throws -> Set<String>
}

/// The device a session was opened on, as its client names it.
public struct SessionDevice: Sendable, Equatable {
    /// What the user sees in their list of sessions (`Alice's iPhone`, `Firefox on Linux`).
    public var name: String
    /// `ios`, `macos`, `web`, `cli`… as the client says; free text.
    public var platform: String

    public init(name: String, platform: String) {
        self.name = name
        self.platform = platform
    }

    /// Sessions an operator issued with `nimbus user create` (and web auth tokens from
    /// before sessions existed).
    public static let operatorIssued = SessionDevice(name: "operator-issued", platform: "cli")

    /// A device as a client names it, checked: each part 1 to 100 bytes without control
    /// characters; `nil` when a part is not.
    public static func checked(name: String, platform: String) -> SessionDevice? {
        func valid(_ text: String) -> Bool {
            !text.isEmpty && text.utf8.count <= 100
                && !text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
        }
        guard valid(name), valid(platform) else { return nil }
        return SessionDevice(name: name, platform: platform)
    }
}

/// A session as stored (never its token).
public struct Session: Sendable, Equatable {
    public var id: String
    /// The user's account name.
    public var userName: String
    public var container: String
    /// The user as seen from ``container``.
    public var user: UserIdentity
    public var device: SessionDevice
    public var createdAt: Int64
    public var lastSeenAt: Int64
    public var revoked: Bool

    public init(
        id: String, userName: String, container: String, user: UserIdentity, device: SessionDevice, createdAt: Int64,
        lastSeenAt: Int64, revoked: Bool
    ) {
        self.id = id
        self.userName = userName
        self.container = container
        self.user = user
        self.device = device
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.revoked = revoked
    }
}

/// A session just opened or refreshed, with its token.
public struct IssuedSession: Sendable, Equatable {
    public var session: Session
    /// The web auth token (`ckWebAuthToken`); the store keeps only its hash.
    public var token: String

    public init(session: Session, token: String) {
        self.session = session
        self.token = token
    }
}

/// Session tokens and IDs: 32 random bytes, stored as their SHA-256.
public enum SessionToken {
    /// A new token: 32 random bytes as 64 lowercase hex digits.
    public static func generate() -> String { RandomToken.hex(bytes: 32) }

    /// A new session ID: `s_` and 12 random bytes as hex (not a secret).
    public static func newID() -> String { "s_" + RandomToken.hex(bytes: 12) }

    /// What the store keeps of a token: its SHA-256 as lowercase hex. A token is 256 random
    /// bits, so an unsalted fast hash is enough: nobody can search that space.
    public static func hash(_ token: String) -> String {
        SHA256.hash(data: Data(token.utf8)).map { byte in
            let text = String(byte, radix: 16)
            return byte < 16 ? "0" + text : text
        }.joined()
    }
}
