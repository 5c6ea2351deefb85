/// The dashboard's operators: their accounts, their sessions, the audit log of what they
/// looked at, and each container's operator settings. Operators are not end users: they
/// have their own accounts (`nimbus operator create`), made by whoever runs the server.
///
/// Session tokens are stored only as hashes (the caller hashes them): a copy of the
/// database opens no session.
public protocol OperatorStore: Sendable {
    /// Creates an operator with a bcrypt password hash. Fails with an ``AccountError`` if
    /// the name is taken.
    func createOperator(name: String, passwordHash: String, now: Int64) async throws
    /// Replaces an operator's password hash and closes their sessions; `false` if there is no
    /// such operator.
    func setOperatorPassword(name: String, passwordHash: String) async throws -> Bool
    /// An operator's account, or `nil`.
    func operatorAccount(named name: String) async throws -> OperatorAccount?
    /// Every operator, by name.
    func listOperators() async throws -> [OperatorAccount]

    /// Opens a session: `tokenHash` is the SHA-256 of the cookie's token.
    func openOperatorSession(_ session: OperatorSession) async throws
    /// The session whose token hashes to `tokenHash`, if it has not expired by `now`.
    func operatorSession(tokenHash: String, now: Int64) async throws -> OperatorSession?
    /// Closes a session (sign-out). Also forgets sessions that expired before `now`.
    func closeOperatorSession(tokenHash: String, now: Int64) async throws

    /// Writes one line to the audit log.
    func appendAudit(_ entry: OperatorAuditEntry) async throws
    /// The newest `limit` lines of the audit log, newest first.
    func auditLog(limit: Int) async throws -> [OperatorAuditEntry]

    /// Whether operators may look into users' private databases in `container` (off until
    /// an operator turns it on). Fails with an ``AccountError`` for an unknown container.
    func operatorsMayReadPrivateData(container: String) async throws -> Bool
    /// Turns operators' access to users' private databases of `container` on or off.
    func setOperatorsMayReadPrivateData(_ allowed: Bool, container: String) async throws

    /// The users signed into `container`, by account name.
    func containerUsers(container: String) async throws -> [UserIdentity]
}

/// An operator of the dashboard.
public struct OperatorAccount: Sendable, Equatable {
    public var name: String
    /// The bcrypt hash of the password.
    public var passwordHash: String
    public var createdAt: Int64

    public init(name: String, passwordHash: String, createdAt: Int64) {
        self.name = name
        self.passwordHash = passwordHash
        self.createdAt = createdAt
    }
}

/// A signed-in operator's session.
public struct OperatorSession: Sendable, Equatable {
    /// The SHA-256 (hex) of the session cookie's token.
    public var tokenHash: String
    public var operatorName: String
    /// The token every form of this session carries (double submit is not needed: it is
    /// compared with this stored value).
    public var csrfToken: String
    public var createdAt: Int64
    public var expiresAt: Int64

    public init(tokenHash: String, operatorName: String, csrfToken: String, createdAt: Int64, expiresAt: Int64) {
        self.tokenHash = tokenHash
        self.operatorName = operatorName
        self.csrfToken = csrfToken
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// One line of the operators' audit log: who looked at or changed what, when.
public struct OperatorAuditEntry: Sendable, Equatable {
    public var at: Int64
    public var operatorName: String
    /// What was done (`view private database`, …).
    public var action: String
    public var container: String
    /// What was looked at: a user record name, a zone, a record.
    public var detail: String

    public init(at: Int64, operatorName: String, action: String, container: String, detail: String) {
        self.at = at
        self.operatorName = operatorName
        self.action = action
        self.container = container
        self.detail = detail
    }
}
