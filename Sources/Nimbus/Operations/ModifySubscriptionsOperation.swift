import NimbusProtocol

/// Saves and deletes subscriptions, reporting each. The SDK's counterpart of
/// `CKModifySubscriptionsOperation`.
public final class ModifySubscriptionsOperation: DatabaseOperation, @unchecked Sendable {
    @Guarded public var subscriptionsToSave: [Subscription]?
    @Guarded public var subscriptionIDsToDelete: [Subscription.ID]?

    @Guarded public var perSubscriptionSaveBlock: (@Sendable (Subscription.ID, Result<Subscription, NimbusError>) -> Void)?
    @Guarded public var perSubscriptionDeleteBlock: (@Sendable (Subscription.ID, Result<Void, NimbusError>) -> Void)?
    /// Success, or ``NimbusError/Code/partialFailure`` naming each subscription that failed.
    @Guarded public var modifySubscriptionsResultBlock: (@Sendable (Result<Void, NimbusError>) -> Void)?

    public init(subscriptionsToSave: [Subscription]? = nil, subscriptionIDsToDelete: [Subscription.ID]? = nil) {
        super.init()
        self.subscriptionsToSave = subscriptionsToSave
        self.subscriptionIDsToDelete = subscriptionIDsToDelete
    }

    override func execute(in database: Database) async -> Result<Void, NimbusError> {
        let saves = subscriptionsToSave ?? []
        let deletes = subscriptionIDsToDelete ?? []
        do {
            let results = try await database.modifySubscriptions(saving: saves, deleting: deletes)
            var failures: [NimbusError.ItemID: NimbusError] = [:]
            for subscription in saves {
                let result = results.saveResults[subscription.id] ?? .failure(.malformedResponse("no result"))
                if case .failure(let error) = result { failures[.subscription(subscription.id)] = error }
                perSubscriptionSaveBlock?(subscription.id, result)
            }
            for id in deletes {
                let result = results.deleteResults[id] ?? .failure(.malformedResponse("no result"))
                if case .failure(let error) = result { failures[.subscription(id)] = error }
                perSubscriptionDeleteBlock?(id, result)
            }
            reportProgress(saves.count + deletes.count, of: saves.count + deletes.count)
            return Self.outcome(failures, of: saves.count + deletes.count)
        } catch {
            return .failure(error as? NimbusError ?? NimbusError(.internalError, "\(error)"))
        }
    }

    override func deliverResult(_ result: Result<Void, NimbusError>) {
        modifySubscriptionsResultBlock?(result)
    }
}
