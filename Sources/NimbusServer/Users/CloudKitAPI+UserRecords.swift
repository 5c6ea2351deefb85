import NimbusProtocol
import NimbusStore

/// The user record: as in CloudKit, every user of a container has a record of type `Users`
/// named by their user record name, in the default zone of the public database and of their
/// private database.
///
/// It is created the first time it is needed, by the user it belongs to: when it is looked up
/// (`records/lookup`) or written (`records/modify`). So it can be fetched with its change tag
/// and updated like any record, by its user only in the public database (creator-only
/// writes); nobody else can claim its name first, and it can't be deleted or change type.
extension CloudKitAPI {
    static let userRecordType = SchemaRules.userRecordType

    /// The user whose user record `name` is in the call's database, if it names one: in the
    /// public database any user of the container, in a private database only its owner.
    func userRecordOwner(named name: String, zone: String, _ call: APICall) async throws -> UserIdentity? {
        // User record names start with '_' (`nimbus user create` makes them so).
        guard zone == ZoneID.defaultZoneName, name.hasPrefix("_") else { return nil }
        switch call.identity.scope {
        case .public:
            return try await accounts.user(recordName: name, container: call.identity.container)
        case .private:
            guard let user = call.identity.user, user.recordName == name else { return nil }
            return user
        case .shared:
            return nil
        }
    }

    /// Creates `user`'s user record in the call's database (type `Users`, no fields, created
    /// by the user) unless it exists; returns the stored record.
    @discardableResult
    func ensureUserRecord(of user: UserIdentity, _ call: APICall) async throws -> StoredRecord? {
        let creation = RecordOperation(
            type: .create, record: Record(recordName: user.recordName, recordType: Self.userRecordType))
        let outcome = try await commits.modifyRecords(
            [creation], zone: ZoneID.defaultZoneName, atomic: false,
            policy: WritePolicy(creatorOnlyWrites: false, now: now()),
            caller: Caller(userRecordName: user.recordName), in: call.database)
        if case .saved(let stored)? = outcome.results.first { return stored }
        // It existed already (EXISTS), perhaps created by a concurrent request.
        return try await store.lookupRecords([user.recordName], zone: ZoneID.defaultZoneName, in: call.database)
            .first ?? nil
    }

    /// Checks an operation on a user record and creates the record first, so that `create`
    /// fails with EXISTS and `update` finds it: its type stays `Users` and it is never deleted.
    func prepareUserRecordWrite(_ operation: RecordOperation, path: String, zone: String, _ call: APICall)
        async throws -> UserIdentity?
    {
        guard let user = try await userRecordOwner(named: operation.record.recordName, zone: zone, call) else {
            return nil
        }
        switch operation.type {
        case .delete, .forceDelete:
            throw CloudKitError.badRequest(
                "'\(path)': record '\(user.recordName)' is the user record of a user of this container; "
                    + "it can't be deleted")
        default:
            guard operation.record.recordType == Self.userRecordType else {
                throw CloudKitError.badRequest(
                    "'\(path).recordType': record '\(user.recordName)' is the user record of a user of this container; "
                        + "its type is \(Self.userRecordType), not '\(operation.record.recordType)'")
            }
        }
        return user
    }
}
