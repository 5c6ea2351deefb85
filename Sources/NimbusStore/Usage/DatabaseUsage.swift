import NimbusProtocol

/// The bytes a database holds, as a quota counts them: the fields of its live records (as
/// stored), and each asset its live records reference, once however many reference it. A
/// delete frees both at once; unreferenced bytes the collector has yet to reclaim do not count.
///
/// Each engine keeps this as a counter on the database's row, changed by ``UsageDelta`` in
/// the transaction of every write that changes it, so reading it (and checking a quota) costs
/// the same however large the database is (``UsageStore``).
public struct DatabaseUsage: Sendable, Equatable {
    /// The UTF-8 bytes of the live records' stored fields.
    public var recordBytes: Int64
    /// The sizes of the distinct assets live records reference.
    public var assetBytes: Int64
    /// What the quota compares.
    public var totalBytes: Int64 { recordBytes + assetBytes }

    public init(recordBytes: Int64, assetBytes: Int64) {
        self.recordBytes = recordBytes
        self.assetBytes = assetBytes
    }

    /// A database that holds nothing (also one never written).
    public static let empty = DatabaseUsage(recordBytes: 0, assetBytes: 0)

    /// QUOTA_EXCEEDED when the write that changed the database by `delta` and left it at
    /// `self` took it above `quota` and made it larger than before; `nil` when it may
    /// commit. A write that frees bytes, or changes none, always may: a user over a lowered
    /// quota can still delete and edit down.
    public func exceeding(_ quota: Int64?, grownBy delta: UsageDelta) -> CloudKitError? {
        guard let quota, totalBytes > quota, delta.totalBytes > 0 else { return nil }
        return CloudKitError(
            .quotaExceeded,
            "this request would take the database to \(totalBytes) bytes (\(recordBytes) of records, \(assetBytes) of "
                + "assets) and its quota is \(quota) bytes; nothing was written: delete records or assets to free space")
    }
}

/// How one write changes a database's ``DatabaseUsage``: what the engine adds to the
/// database's counter in the write's transaction (negative: bytes freed).
public struct UsageDelta: Sendable, Equatable {
    public var recordBytes: Int64
    public var assetBytes: Int64
    public var totalBytes: Int64 { recordBytes + assetBytes }

    public init(recordBytes: Int64 = 0, assetBytes: Int64 = 0) {
        self.recordBytes = recordBytes
        self.assetBytes = assetBytes
    }

    /// No change: the engine leaves the counter alone.
    public var isZero: Bool { recordBytes == 0 && assetBytes == 0 }

    /// The change of the live records' bytes a modify plan makes (``ModifyPlan/changes``):
    /// for each record name, its bytes after its last change less its bytes before its
    /// first. A name can change twice in one plan (saved, then tombstoned by a `DELETE_SELF`
    /// cascade), and the cascade's `before` is then the stored row again, so the changes are
    /// not summed one by one.
    public static func recordBytes(of changes: [(before: StoredRecord?, after: StoredRecord)]) -> Int64 {
        // Per record, its first row's bytes before and its last row's after.
        var net: [String: (first: Int64, last: Int64)] = [:]
        net.reserveCapacity(changes.count)
        for (before, after) in changes {
            let bytes = after.usageBytes
            net[after.recordName, default: (before?.usageBytes ?? 0, bytes)].last = bytes
        }
        return net.values.reduce(0) { $0 + $1.last - $1.first }
    }
}

extension StoredRecord {
    /// What the record counts in its database's ``DatabaseUsage/recordBytes``: the UTF-8
    /// bytes of its stored fields, nothing for a tombstone.
    public var usageBytes: Int64 { deleted ? 0 : Int64(fieldsJSON.utf8.count) }
}
