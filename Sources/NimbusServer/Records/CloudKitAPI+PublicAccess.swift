import NimbusProtocol
import NimbusStore

/// The public database's per-record-type permissions (the schema's grants, ``PublicAccess``)
/// on the requests that read: lookups answer ACCESS_DENIED per record, queries on a type the
/// caller may not read fail (or, where only creators read, return the caller's own records),
/// change feeds leave unreadable records out, and query subscriptions need READ on their type.
/// Writes are checked by the store, in the transaction (``WritePolicy/publicAccess``).
extension CloudKitAPI {
    /// The permissions that apply to the call: `nil` outside the public database.
    func publicAccess(_ call: APICall) async throws -> PublicAccess? {
        guard call.identity.scope == .public else { return nil }
        let current = try await schemas.current(call.identity.container, call.identity.environment)
        return PublicAccess(schema: current.schema)
    }

    /// The write policy of the call's database: the public database's grants and the
    /// container's quota, or the user's quota of a private database.
    func writePolicy(_ call: APICall) async throws -> WritePolicy {
        if let access = try await publicAccess(call) {
            var policy = WritePolicy(publicAccess: access, now: now())
            policy.quotaBytes = containerQuotaBytes
            return policy
        }
        var policy = WritePolicy(creatorOnlyWrites: false, now: now())
        if call.database.scope == .private { policy.quotaBytes = userQuotaBytes }
        return policy
    }

    /// Whether the caller may read a stored record (tombstones included).
    func mayRead(_ record: StoredRecord, _ access: PublicAccess?, _ call: APICall) -> Bool {
        guard let access else { return true }
        return access.allows(
            .read, record.recordType, creator: record.created.userRecordName, accessor: call.identity.accessor)
    }

    /// For a query in the public database: `nil` when the caller reads every record of the
    /// type, the caller's user record name when they read only the records they created.
    /// - Throws: ACCESS_DENIED when they read none.
    func queryReader(_ recordType: String, _ access: PublicAccess?, _ call: APICall) throws(CloudKitError) -> String? {
        guard let access else { return nil }
        let accessor = call.identity.accessor
        if access.allows(.read, recordType, creator: nil, accessor: accessor) { return nil }
        if access.readsOnlyOwnRecords(recordType, accessor: accessor), case .user(let me) = accessor { return me }
        throw access.denial(.read, recordType, accessor: accessor)
    }
}

extension RequestIdentity {
    /// Who the caller is, as the public database's permissions see them.
    var accessor: PublicAccess.Accessor {
        if isAdmin { return .admin }
        return user.map { .user($0.recordName) } ?? .anonymous
    }
}
