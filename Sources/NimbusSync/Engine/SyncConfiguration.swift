import Nimbus

/// What a ``SyncEngine`` syncs and how it resolves conflicts.
public struct SyncConfiguration: Sendable {
    /// The custom zones of the private database the engine keeps in sync.
    public var zones: [String]
    /// The ID of the database subscription the engine creates, so pushes name changed zones;
    /// `nil` for an engine that only fetches on launch and on demand.
    public var subscriptionID: String?
    /// Merge rules by record type; types without rules use ``defaultMergeRules``.
    public var mergeRules: [String: MergeRules]
    public var defaultMergeRules: MergeRules
    /// What to do when a zone disappears from the server (deleted, or a wiped server).
    public var zoneLossPolicy: ZoneLossPolicy
    /// Records per `records/modify` request (the server's limit is 200).
    public var batchSize: Int
    /// Approximate bytes of field data per request.
    public var batchBytes: Int
    /// Retries of retryable errors (throttling, unavailability, network) per send or fetch.
    public var retryPolicy: RetryPolicy

    public enum ZoneLossPolicy: Sendable, Hashable {
        /// Recreate the zone and upload this device's copy of its records again (the default:
        /// nothing the user made is lost because a server forgot it).
        case recreateAndReupload
        /// Accept the loss: remove the zone's records from this device (pending edits are
        /// kept in the quarantine).
        case discardLocal
    }

    public init(
        zones: [String], subscriptionID: String? = "nimbus-sync", mergeRules: [String: MergeRules] = [:],
        defaultMergeRules: MergeRules = MergeRules(), zoneLossPolicy: ZoneLossPolicy = .recreateAndReupload,
        batchSize: Int = 200, batchBytes: Int = 900_000,
        retryPolicy: RetryPolicy = RetryPolicy(
            maxAttempts: 6, initialBackoff: .milliseconds(50), maximumBackoff: .seconds(5), multiplier: 2)
    ) {
        self.zones = zones
        self.subscriptionID = subscriptionID
        self.mergeRules = mergeRules
        self.defaultMergeRules = defaultMergeRules
        self.zoneLossPolicy = zoneLossPolicy
        self.batchSize = batchSize
        self.batchBytes = batchBytes
        self.retryPolicy = retryPolicy
    }

    /// The most bytes the asset cache keeps on disk: beyond it, the least recently used
    /// files are evicted (never those pending changes hold). 256 MB by default.
    public var assetCacheBytes: Int64 = 256 << 20

    /// Assets smaller than this are downloaded as soon as a fetch brings their records
    /// (`nil`, the default: only on demand, ``SyncEngine/assetFile(for:field:progress:)``,
    /// or when the app calls ``SyncEngine/prefetchAssets(inZones:smallerThan:)``).
    public var eagerAssetBytes: Int64?

    func rules(for recordType: String) -> MergeRules { mergeRules[recordType] ?? defaultMergeRules }
}
