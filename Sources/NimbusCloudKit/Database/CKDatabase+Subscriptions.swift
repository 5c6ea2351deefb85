import Foundation
import Nimbus
import NimbusProtocol

extension CKDatabase {
    /// Every subscription of the database.
    public func allSubscriptions() async throws -> [CKSubscription] {
        let database = try configured()
        return try await mappingErrors { try await database.allSubscriptions().map { CKSubscription.from($0, scope: databaseScope) } }
    }

    /// One subscription.
    /// - Throws: ``CKError/Code/unknownItem``.
    public func subscription(for subscriptionID: CKSubscription.ID) async throws -> CKSubscription {
        let database = try configured()
        return try await mappingErrors { CKSubscription.from(try await database.subscription(for: subscriptionID), scope: databaseScope) }
    }

    /// Creates or replaces a subscription.
    @discardableResult
    public func save(_ subscription: CKSubscription) async throws -> CKSubscription {
        let (saveResults, _) = try await modifySubscriptions(saving: [subscription], deleting: [])
        guard let result = saveResults[subscription.subscriptionID] else {
            throw CKError(.internalError, message: "the server returned no result for \(subscription.subscriptionID)")
        }
        return try result.get()
    }

    /// Deletes a subscription.
    @discardableResult
    public func deleteSubscription(withID subscriptionID: CKSubscription.ID) async throws -> CKSubscription.ID {
        let (_, deleteResults) = try await modifySubscriptions(saving: [], deleting: [subscriptionID])
        guard let result = deleteResults[subscriptionID] else {
            throw CKError(.internalError, message: "the server returned no result for \(subscriptionID)")
        }
        try result.get()
        return subscriptionID
    }

    /// Saves and deletes subscriptions, with each item's result.
    public func modifySubscriptions(
        saving subscriptionsToSave: [CKSubscription], deleting subscriptionIDsToDelete: [CKSubscription.ID]
    ) async throws -> (
        saveResults: [CKSubscription.ID: Result<CKSubscription, any Error>],
        deleteResults: [CKSubscription.ID: Result<Void, any Error>]
    ) {
        let database = try configured()
        var saveResults: [CKSubscription.ID: Result<CKSubscription, any Error>] = [:]
        var outgoing: [Subscription] = []
        for subscription in subscriptionsToSave {
            do { outgoing.append(try subscription.nimbus()) } catch { saveResults[subscription.subscriptionID] = .failure(error) }
        }
        let results = try await mappingErrors {
            try await database.modifySubscriptions(saving: outgoing, deleting: subscriptionIDsToDelete)
        }
        for subscription in outgoing {
            saveResults[subscription.id] =
                results.saveResults[subscription.id].map { $0.map { CKSubscription.from($0, scope: databaseScope) }.mapError { CKError($0) as any Error } }
                ?? .failure(CKError(.internalError, message: "no result"))
        }
        var deleteResults: [CKSubscription.ID: Result<Void, any Error>] = [:]
        for id in subscriptionIDsToDelete {
            deleteResults[id] =
                results.deleteResults[id].map { $0.mapError { CKError($0) as any Error } }
                ?? .failure(CKError(.internalError, message: "no result"))
        }
        return (saveResults, deleteResults)
    }

    public func fetchAllSubscriptions(completionHandler: @escaping @Sendable ([CKSubscription]?, (any Error)?) -> Void) {
        Task { do { completionHandler(try await allSubscriptions(), nil) } catch { completionHandler(nil, error) } }
    }

    public func fetch(
        withSubscriptionID subscriptionID: CKSubscription.ID,
        completionHandler: @escaping @Sendable (CKSubscription?, (any Error)?) -> Void
    ) {
        Task { do { completionHandler(try await subscription(for: subscriptionID), nil) } catch { completionHandler(nil, error) } }
    }

    public func save(
        _ subscription: CKSubscription, completionHandler: @escaping @Sendable (CKSubscription?, (any Error)?) -> Void
    ) {
        Task { do { completionHandler(try await save(subscription), nil) } catch { completionHandler(nil, error) } }
    }

    public func delete(
        withSubscriptionID subscriptionID: CKSubscription.ID,
        completionHandler: @escaping @Sendable (CKSubscription.ID?, (any Error)?) -> Void
    ) {
        Task {
            do { completionHandler(try await deleteSubscription(withID: subscriptionID), nil) } catch { completionHandler(nil, error) }
        }
    }
}
