/// What built-in accounts and a container's sign-in page need from storage: the container's
/// sign-in settings, the links from a login (an email address, or later an OIDC issuer and
/// subject) to a Nimbus user, password hashes and one-time codes.
public protocol SignInStore: Sendable {
    /// The container's settings (all off for a container never configured). Fails with an
    /// ``AccountError`` for an unknown container.
    func signInSettings(container: String) async throws -> ContainerSignInSettings
    func setSignInSettings(_ settings: ContainerSignInSettings, container: String) async throws

    /// The user a login links to: `issuer` is ``UserLogin/emailIssuer`` for built-in accounts
    /// (subject: the lowercased email address) or an OIDC issuer URL (subject: its `sub`).
    func login(issuer: String, subject: String) async throws -> UserLogin?

    /// Registers an email-and-password login waiting for its email to be verified: creates
    /// its user (account name: the address, or the address and a suffix when that name is
    /// taken) or, for an unverified login, replaces its password. Returns the login; a
    /// verified login is returned untouched.
    func registerPasswordLogin(email: String, passwordHash: String, now: Int64) async throws -> UserLogin

    /// Sets a login's password hash (after a reset) and marks its address verified.
    func setPassword(issuer: String, subject: String, passwordHash: String, now: Int64) async throws
    /// Marks a login's address verified.
    func markVerified(issuer: String, subject: String, now: Int64) async throws

    /// Stores a one-time code's hash for a user.
    func saveCode(hash: String, purpose: OneTimeCodePurpose, userName: String, expiresAt: Int64) async throws
    /// Uses up an unexpired, unused code of `purpose` for `userName`; `false` if there is none.
    func consumeCode(hash: String, purpose: OneTimeCodePurpose, userName: String, now: Int64) async throws -> Bool

    /// Signs a user into a container: gives them a record name there if they have none
    /// (different in each container, as in CloudKit), and returns their identity there.
    func signIntoContainer(userName: String, container: String) async throws -> UserIdentity
}

/// How a container lets people sign in (`nimbus container set-signin`).
public struct ContainerSignInSettings: Sendable, Equatable {
    /// Built-in accounts: email address and password. Off by default.
    public var passwords: Bool
    /// Origins (`https://app.example`) the sign-in page may send a signed-in user back to.
    public var redirectOrigins: [String]
    /// Whether deleting an account also deletes the public records the user created.
    public var deletePublicRecords: Bool

    public init(passwords: Bool = false, redirectOrigins: [String] = [], deletePublicRecords: Bool = false) {
        self.passwords = passwords
        self.redirectOrigins = redirectOrigins
        self.deletePublicRecords = deletePublicRecords
    }
}

/// A way to sign in that leads to a Nimbus user.
public struct UserLogin: Sendable, Equatable {
    /// The issuer of built-in accounts' logins, whose subjects are lowercased email addresses.
    public static let emailIssuer = "nimbus:email"

    public var issuer: String
    public var subject: String
    /// The user's account name.
    public var userName: String
    /// The bcrypt hash of a built-in account's password.
    public var passwordHash: String?
    /// When the address was verified; `nil` while it is not.
    public var verifiedAt: Int64?

    public init(issuer: String, subject: String, userName: String, passwordHash: String?, verifiedAt: Int64?) {
        self.issuer = issuer
        self.subject = subject
        self.userName = userName
        self.passwordHash = passwordHash
        self.verifiedAt = verifiedAt
    }

    /// The subject of an email login: the address with ASCII letters lowercased.
    public static func emailSubject(_ email: String) -> String { UserIdentity.emailKey(email) }
}

/// What a one-time code mailed to a user is for.
public enum OneTimeCodePurpose: String, Sendable {
    case verifyEmail = "verify"
    case resetPassword = "reset"
}
