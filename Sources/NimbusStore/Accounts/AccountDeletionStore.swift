/// What deleting a user's account in a container needs from storage.
public protocol AccountDeletionStore: Sendable {
    /// Up to `limit` live records of a public database that the user with record name
    /// `creator` created: their zones and names.
    func recordsCreated(by creator: String, in database: DatabaseKey, limit: Int) async throws -> [CreatedRecord]

    /// Removes everything of the user's in `container`, in one transaction: their private
    /// databases in both environments (records, zones, index entries, asset references and
    /// uploads; the asset collector then deletes the bytes nothing records), their
    /// subscriptions (public ones too), notification collection, push devices and tokens,
    /// sessions and identity (record name). A user left in no container loses their logins,
    /// codes and user row too. Returns the IDs of the unrevoked sessions it removed.
    func deleteAccount(userName: String, container: String) async throws -> [String]
}

/// A record a user created: where it is and its name.
public struct CreatedRecord: Sendable, Equatable {
    public var zone: String
    public var recordName: String
    public var recordType: String

    public init(zone: String, recordName: String, recordType: String) {
        self.zone = zone
        self.recordName = recordName
        self.recordType = recordType
    }
}
