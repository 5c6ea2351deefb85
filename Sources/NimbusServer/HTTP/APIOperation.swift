import NimbusProtocol

/// Every operation the CloudKit Web Services API serves, by its path after
/// `/database/1/{container}/{environment}/{database}/`.
///
/// This table is the single list of routes: the router dispatches on it and a test checks
/// that `openapi.yaml` documents each entry.
public enum APIOperation: String, CaseIterable, Sendable {
    case recordsModify = "records/modify"
    case recordsLookup = "records/lookup"
    case recordsChanges = "records/changes"
    case recordsQuery = "records/query"
    /// Share metadata by short GUID (`shortGUIDs: [{value}]`), before accepting.
    case recordsResolve = "records/resolve"
    /// Accepts shares by short GUID, for the signed-in user.
    case recordsAccept = "records/accept"
    case zonesList = "zones/list"
    case zonesLookup = "zones/lookup"
    case zonesModify = "zones/modify"
    case zonesChanges = "zones/changes"
    case changesDatabase = "changes/database"
    case changesZone = "changes/zone"
    case usersCurrent = "users/current"
    case usersCaller = "users/caller"
    /// POST: the discoverable users among lookup infos (email address, phone number, record
    /// name); GET: the discoverable users among the caller's contacts ("Discovering All User
    /// Identities").
    case usersDiscover = "users/discover"
    /// Discoverable users by email address.
    case usersLookupEmail = "users/lookup/email"
    /// The discoverable users in the caller's address book ("Fetching Contacts").
    case usersLookupContacts = "users/lookup/contacts"
    /// Discoverable users by user record name.
    case usersLookupID = "users/lookup/id"
    /// Nimbus extension: whether the signed-in user is discoverable in the container; POST
    /// `{discoverable}` opts in or out.
    case usersDiscoverability = "users/discoverability"
    case subscriptionsList = "subscriptions/list"
    case subscriptionsLookup = "subscriptions/lookup"
    case subscriptionsModify = "subscriptions/modify"
    /// Addressed without a database: `/database/1/{container}/{environment}/tokens/create`.
    case tokensCreate = "tokens/create"
    /// Addressed without a database: `/database/1/{container}/{environment}/tokens/register`.
    case tokensRegister = "tokens/register"
    /// Nimbus extension: the signed-in user's notification collection since a token.
    case notificationsChanges = "notifications/changes"
    /// Nimbus extension: marks notifications of the collection read.
    case notificationsMarkRead = "notifications/markRead"
    /// Upload URLs for asset fields (`tokens: [{recordName, recordType, fieldName}]`).
    case assetsUpload = "assets/upload"
    /// The asset dictionaries of existing asset fields (`assets: [{recordName, fieldName}]`),
    /// to save on other records without uploading the bytes again.
    case assetsRereference = "assets/rereference"
    /// Nimbus extension: the signed-in user's sessions in the container.
    case sessionsList = "sessions/list"
    /// Nimbus extension: revokes sessions of the signed-in user (`sessionIDs`).
    case sessionsRevoke = "sessions/revoke"
    /// Nimbus extension: a new web auth token for the current session; the old one stops working.
    case sessionsRefresh = "sessions/refresh"
    /// Nimbus extension: a new session of the signed-in user, for a web service acting on
    /// their behalf (CloudKit's `CKFetchWebAuthTokenOperation`).
    case sessionsCreate = "sessions/create"
    /// Nimbus extension: registers a built-in account and mails a verification code.
    case accountsSignUp = "accounts/signup"
    /// Nimbus extension: verifies a built-in account's address with the mailed code.
    case accountsVerify = "accounts/verify"
    /// Nimbus extension: signs in with a built-in account, opening a session.
    case accountsSignIn = "accounts/signin"
    /// Nimbus extension: exchanges an identity provider's ID token (Sign in with Apple,
    /// Google, OpenID Connect) for a session.
    case accountsSignInWithIDToken = "accounts/signin/idtoken"
    /// Nimbus extension: mails a password reset code.
    case accountsForgotPassword = "accounts/password/forgot"
    /// Nimbus extension: sets a new password with a reset code.
    case accountsResetPassword = "accounts/password/reset"
    /// Nimbus extension: the signed-in user deletes their account in the container.
    case accountsDelete = "accounts/delete"
    /// Nimbus extension: a device's hops of traced changes (see docs/OBSERVABILITY.md).
    case tracesReport = "traces/report"

    /// The HTTP methods the operation answers.
    public var methods: [String] {
        switch self {
        case .zonesList, .usersCurrent: return ["GET", "POST"]
        case .usersCaller, .subscriptionsList, .usersDiscoverability, .usersDiscover: return ["GET", "POST"]
        case .sessionsList: return ["GET", "POST"]
        default: return ["POST"]
        }
    }

    /// The largest request body the operation takes, in bytes; the server's ceiling
    /// (``ServerConfiguration/maxBodyBytes``, 64 MiB by default) caps it. A larger body is
    /// refused with `LIMIT_EXCEEDED` before it is read.
    ///
    /// `records/modify` has room for its 400 records of 1 MiB of fields each, plus 16 KiB each
    /// for names, tags and the JSON around them (≈ 406 MiB: the ceiling decides). A batch of
    /// 200 subscriptions, each with a query of long filters, fits in 4 MiB. Every other
    /// request carries names, tokens, a query and a few options: 1 MiB.
    public var maxBodyBytes: Int {
        switch self {
        case .recordsModify: return ProtocolLimits.maxRecordOperations * (ProtocolLimits.maxRecordBytes + (16 << 10))
        case .subscriptionsModify: return 4 << 20
        default: return 1 << 20
        }
    }

    /// Whether the operation changes data (and so needs a user or an admin key in the public database).
    var isWrite: Bool {
        self == .recordsModify || self == .zonesModify || self == .subscriptionsModify || self == .assetsUpload
    }

    /// Operations of the container environment rather than of one database (CloudKit
    /// addresses them without the `{database}` path segment; Nimbus accepts both forms).
    public var isDatabaseless: Bool {
        self == .tokensCreate || self == .tokensRegister || self == .tracesReport || isAccountEntry
    }

    /// The operations CloudKit JS also addresses under `/device/1/{container}/{environment}/`
    /// (a browser's push token), beside their `/database/1/` forms.
    public var isDeviceOperation: Bool {
        self == .tokensCreate || self == .tokensRegister
    }

    /// Operations that need no signed-in user, only the API token: those that make one.
    public var isAccountEntry: Bool {
        switch self {
        case .accountsSignUp, .accountsVerify, .accountsSignIn, .accountsForgotPassword, .accountsResetPassword,
            .accountsSignInWithIDToken:
            true
        default: false
        }
    }
}
