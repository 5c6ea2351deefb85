import NimbusProtocol
import NimbusStore

extension CloudKitAPI {
    /// `accounts/delete` `{confirm: "DELETE"}`: the signed-in user leaves the container for
    /// good. Their private databases (both environments) with their assets, their
    /// subscriptions, notifications, push devices and tokens, sessions and record name are
    /// removed, and their push connections close. The public records they created stay, or
    /// are deleted (as an administrator would, so that other devices see the deletions) when
    /// the container says so (`nimbus container set-signin C --delete-public-records on`).
    /// `{status: "DELETED", publicRecordsDeleted}`.
    func deleteAccount(_ call: APICall) async throws -> JSON {
        let user = try Self.sessionUser(call)
        guard try call.body.optionalString("confirm") == "DELETE" else {
            throw CloudKitError.badRequest(
                "deleting the account removes the private database, sessions, subscriptions and push registrations "
                    + "for good: send {\"confirm\": \"DELETE\"}")
        }
        let store = try signInStore
        let container = call.identity.container
        var publicDeleted = 0
        if try await store.signInSettings(container: container).deletePublicRecords {
            for environment in [ContainerEnvironment.development, .production] {
                publicDeleted += try await deletePublicRecords(
                    of: user, in: DatabaseKey(
                        container: container, environment: environment, scope: .public, owner: DatabaseKey.publicOwner),
                    now: call.now)
            }
        }
        let sessions = try await store.deleteAccount(userName: user.name, container: container)
        await pushSessions?.closeConnections(ofSessions: Set(sessions))
        return .object(["status": "DELETED", "publicRecordsDeleted": .int(publicDeleted)])
    }

    /// Deletes the live records `user` created in a public database, 200 at a time, through
    /// the ordinary write path (tombstones, notifications). Returns how many were deleted.
    private func deletePublicRecords(of user: UserIdentity, in database: DatabaseKey, now: Int64) async throws -> Int {
        let store = try signInStore
        let caller = Caller(userRecordName: user.recordName, isAdmin: true)
        var deleted = 0
        while true {
            let created = try await store.recordsCreated(
                by: user.recordName, in: database, limit: ProtocolLimits.maxOperations)
            var progress = 0
            for (zone, records) in Dictionary(grouping: created, by: \.zone) {
                let operations = records.map {
                    RecordOperation(type: .forceDelete, record: Record(recordName: $0.recordName, recordType: $0.recordType))
                }
                let outcome = try await commits.modifyRecords(
                    operations, zone: zone, atomic: false, policy: WritePolicy(creatorOnlyWrites: false, now: now),
                    caller: caller, in: database)
                progress += outcome.results.filter { if case .deleted = $0 { true } else { false } }.count
            }
            deleted += progress
            if progress == 0 { return deleted }
        }
    }
}
