import Foundation
import Nimbus

extension CKSyncEngine {
    /// Compares the signed-in user with the one the state was kept for, reporting a sign-in,
    /// sign-out or switch (and starting over from empty state after a sign-out or switch).
    /// - Returns: whether a user is signed in.
    func checkAccount() async throws -> Bool {
        let container = try database.configured().container
        let current: String?
        do {
            current = try await container.userRecordID().recordName
        } catch let error as NimbusError where error.code == .notAuthenticated {
            current = nil
        } catch {
            throw CKError.wrapping(error)
        }
        let previous = state.data.current.userRecordName
        guard previous != current else { return current != nil }
        let change: Event.AccountChange.ChangeType
        switch (previous, current) {
        case (nil, let user?): change = .signIn(currentUser: CKRecord.ID(recordName: user))
        case (let user?, nil): change = .signOut(previousUser: CKRecord.ID(recordName: user))
        case (let old?, let new?):
            change = .switchAccounts(previousUser: CKRecord.ID(recordName: old), currentUser: CKRecord.ID(recordName: new))
        case (nil, nil): return false
        }
        state.data.withLock { stored in
            if previous != nil { stored = State.Stored() }
            stored.userRecordName = current
        }
        await emit(.accountChange(.init(changeType: change)))
        await emitStateUpdate()
        return current != nil
    }

    /// CKSyncEngine syncs the private and shared databases only.
    func requireSyncableDatabase() throws {
        guard database.databaseScope != .public else {
            throw CKError(.badDatabase, message: "CKSyncEngine syncs the private and shared databases, not the public one")
        }
    }
}
