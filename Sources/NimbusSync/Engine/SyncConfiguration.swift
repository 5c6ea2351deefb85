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

    /// Asset files a send uploads at once (4 by default; 1 uploads one after another). A small
    /// file's upload is a round trip of its own: a batch of many small files goes faster with
    /// several in flight.
    public var maxConcurrentUploads = 4

    /// The most bytes the asset cache keeps on disk: beyond it, the least recently used
    /// files are evicted (never those pending changes hold). 256 MB by default.
    public var assetCacheBytes: Int64 = 256 << 20

    /// Assets smaller than this are downloaded as soon as a fetch brings their records
    /// (`nil`, the default: only on demand, ``SyncEngine/assetFile(for:field:progress:)``,
    /// or when the app calls ``SyncEngine/prefetchAssets(inZones:smallerThan:)``).
    public var eagerAssetBytes: Int64?

    /// The fields encrypted end to end, by record type (the SDK's ``Nimbus/Record/encryptedValues``):
    /// sealed with the zone's key before a send, opened after a fetch, so the server holds only
    /// ciphertext while merges run here on the opened values. Needs the container's
    /// ``Nimbus/Container/encryption``. A field the server already holds encrypted stays so.
    ///
    /// ```swift
    /// var configuration = SyncConfiguration(zones: ["Journal"])
    /// configuration.encryptedFields = ["Entry": ["body", "mood"]]
    /// ```
    public var encryptedFields: [String: Set<String>] = [:]

    /// Whether the engine also syncs the zones other users share with this one (the
    /// container's shared database), beside the private ``zones``: it subscribes to the
    /// shared database, learns of shared zones from its `changes/database` (new ones are
    /// fetched, ended ones removed from the device), and sends this user's changes to them
    /// with the permission the share gives. Off by default.
    ///
    /// Shared zones are named in the ``LocalStore`` by ``ZoneID/localZoneName`` (their name
    /// and owner).
    ///
    /// ```swift
    /// var configuration = SyncConfiguration(zones: ["Albums"])
    /// configuration.syncsSharedDatabase = true
    /// ```
    public var syncsSharedDatabase = false
    /// Whether sends and push-triggered fetches are traced: each send carries a new W3C
    /// `traceparent`, a fetch a push caused continues the push's trace, and how the fetched
    /// changes were applied is reported to the server (`sync.apply`), so `nimbus trace` shows a
    /// change's whole path. On by default; the server keeps spans only if it traces.
    public var tracesChanges = true
    /// The share (0…1) of sends that start a trace, when ``tracesChanges`` is on. Tracing a
    /// request costs the server about a tenth of its CPU time (docs/PERFORMANCE.md, "Tracing
    /// overhead"); an app with heavy write traffic can trace a sample. Fetches a traced push
    /// caused are always traced.
    public var traceSampleRate: Double = 1

    /// The ID of the database subscription the engine creates in the shared database (when
    /// ``syncsSharedDatabase``), so pushes name shared zones that changed.
    public var sharedSubscriptionID: String? = "nimbus-sync-shared"

    func rules(for recordType: String) -> MergeRules { mergeRules[recordType] ?? defaultMergeRules }
}
