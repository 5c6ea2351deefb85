import Foundation
import Nimbus

extension SyncEngine {
    /// Follows an ``Account``: the engine syncs as whoever is signed in there, and reacts when
    /// that changes.
    ///
    /// - **Sign-out** (or a session the server refused): the engine stops fetching and
    ///   sending (``fetchChanges()``, ``sendChanges()`` and ``start()`` throw
    ///   ``NimbusError/Code/notAuthenticated``) and leaves the local data and the outbox
    ///   untouched, unsent. They are not quarantined because the same user usually comes
    ///   back (an expired session, signing in again on the same device) and their edits
    ///   should then go out as if nothing happened. Nothing can leak meanwhile: the store
    ///   still records whose data it holds, so whoever signs in next is compared with that.
    /// - **The same user signs in again**: the engine continues with the new token.
    /// - **A different user signs in** (directly, or after a sign-out): the previous user's
    ///   records and pending changes are quarantined exactly as ``start()``'s account check
    ///   does (``LocalStore/quarantined()``), ``SyncEvent/accountChanged(from:to:)`` is
    ///   reported, and the engine continues with the new user's credentials: call ``start()``
    ///   to set up their zones and fetch their data.
    ///
    /// The engine's service and the account its local data belongs to change together, under
    /// the lock sends hold, so one user's pending edits are never sent with another's token.
    ///
    /// ```swift
    /// let account = try await Account(container: container, sessionStore: KeychainSessionStore())
    /// let engine = SyncEngine(
    ///     service: DatabaseSyncService(database: await account.container.privateCloudDatabase),
    ///     store: try LocalStore(path: "device.sqlite"), configuration: configuration)
    /// try await engine.follow(account)
    /// try await account.signIn(email: "ada@example.com", password: password)
    /// try await engine.start()
    /// ```
    ///
    /// - Parameter makeService: the service for a container carrying the signed-in user's
    ///   token (a ``DatabaseSyncService`` over its private database by default).
    public func follow(
        _ account: Account,
        makeService: @escaping @Sendable (Container) -> any SyncService = {
            DatabaseSyncService(database: $0.privateCloudDatabase)
        }
    ) async throws {
        accountTask?.cancel()
        let (session, container, changes) = await account.subscribe()
        try await withLock { try await self.adopt(session?.userRecordName, container: container, makeService) }
        accountTask = Task {
            for await _ in changes {
                // The account as it is now (later changes may already have happened).
                let (session, container) = await account.current()
                do {
                    try await self.withLock { try await self.adopt(session?.userRecordName, container: container, makeService) }
                } catch {
                    self.emit(.fetchFailed(error))
                }
            }
        }
    }

    /// Stops following the account ``follow(_:makeService:)`` named.
    public func stopFollowingAccount() {
        accountTask?.cancel()
        accountTask = nil
    }

    /// Takes the account's current user (nil: signed out). Runs under the lock.
    private func adopt(_ user: String?, container: Container, _ makeService: @Sendable (Container) -> any SyncService)
        async throws
    {
        guard let user else {
            if !signedOut {
                signedOut = true
                let previous = try await store.reading { try $0.state(StoreTransaction.StateKey.account) }
                emit(.signedOut(account: previous))
            }
            return
        }
        let previous = try await store.transaction { transaction -> String? in
            let previous = try transaction.state(StoreTransaction.StateKey.account)
            if let previous, previous != user { try transaction.quarantineAll(account: previous) }
            try transaction.setState(StoreTransaction.StateKey.account, user)
            return previous
        }
        service = makeService(container)
        signedOut = false
        if let previous, previous != user { emit(.accountChanged(from: previous, to: user)) }
        emit(.signedIn(account: user))
    }

    func refuseWhileSignedOut() throws {
        if signedOut {
            throw NimbusError(.notAuthenticated, "the account is signed out: sign in to sync again")
        }
    }
}

extension Account {
    /// The session and the container carrying it, read together.
    func current() -> (AccountSession?, Container) { (session, container) }
}
