import NimbusProtocol
import NimbusStore

/// Refuses uploads a database has no room for before their bytes arrive: an upload URL is
/// not handed out for a database already at its quota, and a `POST` whose announced size
/// alone would take the database above it is answered at once. The commit of the record
/// (``DatabaseUsage/exceeding(_:grownBy:)``) stays the rule that counts; this only saves
/// the client from sending a file that cannot be saved. (A file the database already holds
/// costs nothing to save; one announced too large is still refused here: the client keeps
/// its bytes and the message says why.)
struct UploadQuota: Sendable {
    let usage: any UsageStore
    var userQuotaBytes: Int64?
    var containerQuotaBytes: Int64?

    func quota(of database: DatabaseKey) -> Int64? {
        database.scope == .public ? containerQuotaBytes : userQuotaBytes
    }

    /// QUOTA_EXCEEDED when `database` holds `quota` bytes or more, or `adding` more would
    /// take it above its quota.
    func check(_ database: DatabaseKey, adding: Int64 = 0) async throws {
        guard let quota = quota(of: database) else { return }
        let used = try await usage.usage(of: database)
        let full = adding == 0 ? used.totalBytes >= quota : used.totalBytes + adding > quota
        guard full else { return }
        throw CloudKitError(
            .quotaExceeded,
            "the database holds \(used.totalBytes) of its \(quota) bytes"
                + (adding > 0 ? " and this file is \(adding) bytes" : "")
                + ": nothing was uploaded; delete records or assets to free space")
    }
}
