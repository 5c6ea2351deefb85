import NimbusProtocol
import NimbusStore

/// The CloudKit Web Services operations, over a ``RecordStore``. Each handler takes a parsed,
/// authenticated ``APICall`` and returns the response body.
struct CloudKitAPI: Sendable {
    let store: any RecordStore
    let accounts: any AccountStore
    /// Subscriptions, the notification collection and push tokens.
    let notifications: any NotificationStore
    /// Where every write path hands the notifications its commit created (the push hub).
    let delivery: any PushDelivery
    /// The schemas of container environments: checked on saves and queries.
    let schemas: SchemaRegistry
    /// Upload slots and the assets databases hold.
    let assets: any AssetMetadataStore
    /// Upload and download lifetimes.
    var assetSettings = AssetSettings()
    /// The time of day of write policies and push tokens.
    let clock: WallClock
    /// The quota of each private database (``ServerConfiguration/userQuotaBytes``).
    var userQuotaBytes: Int64?
    /// Built-in accounts (`nil`: none, as in tests of other parts).
    var signIn: AccountService? = nil
    /// Sign-in with identity providers' ID tokens (`nil`: none, as in tests of other parts).
    var identitySignIn: IdentitySignIn? = nil
    /// Closes the push connections of revoked sessions (the push hub).
    var pushSessions: PushHub? = nil
    /// The quota of each public database (``ServerConfiguration/containerQuotaBytes``).
    var containerQuotaBytes: Int64?
    /// Refuses upload URLs for a database at its quota (`nil`: no quotas).
    var uploadQuota: UploadQuota? = nil
    /// Where commits, records read and change-feed pages are counted (`nil`: metrics off).
    var metrics: ServerMetrics? = nil
    /// Makes share short GUIDs and participant IDs (secure random; injected by tests).
    var shareIDs: @Sendable () -> String = ShareIDs.random
    /// Adds `commit` hops to traced writes (`nil`: no tracing).
    var tracer: NimbusTracer? = nil

    func handle(_ call: APICall, sharedResolved: Bool = false) async throws -> JSON {
        if call.identity.scope == .shared, call.identity.sharedOwner == nil, !sharedResolved {
            return try await handleShared(call)
        }
        switch call.operation {
        case .recordsResolve: return try await resolveShares(call)
        case .recordsAccept: return try await acceptShares(call)
        case .recordsModify: return try await modifyRecords(call)
        case .recordsLookup: return try await lookupRecords(call)
        case .recordsChanges: return try await recordChanges(call)
        case .recordsQuery: return try await queryRecords(call)
        case .zonesList: return try await listZones(call)
        case .zonesLookup: return try await lookupZones(call)
        case .zonesModify: return try await modifyZones(call)
        case .zonesChanges: return try await zoneChanges(call)
        case .changesDatabase: return try await databaseChanges(call)
        case .changesZone: return try await zoneRecordChanges(call)
        case .usersCurrent, .usersCaller: return try await currentUser(call)
        case .usersDiscover: return try await discoverUsers(call)
        case .usersLookupEmail: return try await lookUpUsersByEmail(call)
        case .usersLookupContacts: return try await lookUpContacts(call)
        case .usersLookupID: return try await lookUpUsersByRecordName(call)
        case .usersDiscoverability: return try await discoverability(call)
        case .subscriptionsList: return try await listSubscriptions(call)
        case .subscriptionsLookup: return try await lookupSubscriptions(call)
        case .subscriptionsModify: return try await modifySubscriptions(call)
        case .tokensCreate: return try await createToken(call)
        case .tokensRegister: return try await registerToken(call)
        case .notificationsChanges: return try await notificationChanges(call)
        case .notificationsMarkRead: return try await markNotificationsRead(call)
        case .assetsUpload: return try await requestAssetUploads(call)
        case .assetsRereference: return try await rereferenceAssets(call)
        case .sessionsList: return try await listSessions(call)
        case .sessionsRevoke: return try await revokeSessions(call)
        case .sessionsRefresh: return try await refreshSession(call)
        case .sessionsCreate: return try await createSession(call)
        case .accountsDelete: return try await deleteAccount(call)
        case .accountsSignUp, .accountsVerify, .accountsSignIn, .accountsForgotPassword, .accountsResetPassword:
            return try await accountEntry(call)
        case .accountsSignInWithIDToken: return try await identityTokenSignIn(call)
        case .tracesReport: return try await reportTraceSpans(call)
        }
    }

    /// Milliseconds since the epoch, by the server's clock.
    func now() -> Int64 { clock.nowMillis() }
}

import Foundation
