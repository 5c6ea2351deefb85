/// Whether a user is signed in to the container (CloudKit's `CKAccountStatus`).
public enum CKAccountStatus: Int, Sendable, Hashable {
    /// The status could not be determined (the server could not be asked).
    case couldNotDetermine = 0
    /// A user is signed in and the server accepts their token.
    case available = 1
    /// The account is restricted (never reported by Nimbus).
    case restricted = 2
    /// Nobody is signed in (no `NIMBUS_WEB_AUTH_TOKEN`), or the server refused the token.
    case noAccount = 3
    /// The account is temporarily unavailable (never reported by Nimbus).
    case temporarilyUnavailable = 4
}
