import Foundation

/// Saves and deletes subscriptions: CloudKit's `CKModifySubscriptionsOperation`. Per-item
/// blocks for saves then deletions, in order, then ``modifySubscriptionsResultBlock``.
///
/// `@unchecked Sendable`: see ``CKOperation``.
open class CKModifySubscriptionsOperation: CKDatabaseOperation, @unchecked Sendable {
    @Protected public var subscriptionsToSave: [CKSubscription]? = nil
    @Protected public var subscriptionIDsToDelete: [CKSubscription.ID]? = nil
    @Protected public var perSubscriptionSaveBlock:
        (@Sendable (CKSubscription.ID, Result<CKSubscription, any Error>) -> Void)? = nil
    @Protected public var perSubscriptionDeleteBlock: (@Sendable (CKSubscription.ID, Result<Void, any Error>) -> Void)? = nil
    @Protected public var modifySubscriptionsResultBlock: (@Sendable (Result<Void, any Error>) -> Void)? = nil

    public override init() {
        super.init()
    }

    public convenience init(subscriptionsToSave: [CKSubscription]? = nil, subscriptionIDsToDelete: [CKSubscription.ID]? = nil) {
        self.init()
        self.subscriptionsToSave = subscriptionsToSave
        self.subscriptionIDsToDelete = subscriptionIDsToDelete
    }

    override func execute() async {
        let toSave = subscriptionsToSave ?? []
        let toDelete = subscriptionIDsToDelete ?? []
        let results: (
            saveResults: [CKSubscription.ID: Result<CKSubscription, any Error>],
            deleteResults: [CKSubscription.ID: Result<Void, any Error>]
        )
        do {
            results = try await targetDatabase.modifySubscriptions(saving: toSave, deleting: toDelete)
        } catch {
            finishReporting(CKError.wrapping(error))
            return
        }
        var failures: [CKError.PartialItemID: CKError] = [:]
        _ = report(
            toSave.map(\.subscriptionID), results.saveResults, key: { .subscription($0) }, into: &failures,
            to: perSubscriptionSaveBlock)
        _ = report(
            toDelete, results.deleteResults, key: { .subscription($0) }, into: &failures, to: perSubscriptionDeleteBlock)
        finishReporting(failures.isEmpty ? cancellationError : CKError.partialFailure(failures))
    }

    override func reportFinal(_ error: CKError?) {
        modifySubscriptionsResultBlock?(error.map { .failure($0) } ?? .success(()))
    }
}

/// Fetches subscriptions by ID, or every one: CloudKit's `CKFetchSubscriptionsOperation`.
///
/// `@unchecked Sendable`: see ``CKOperation``.
open class CKFetchSubscriptionsOperation: CKDatabaseOperation, @unchecked Sendable {
    /// The subscriptions to fetch; every subscription of the database when `nil`.
    @Protected public var subscriptionIDs: [CKSubscription.ID]? = nil
    @Protected public var perSubscriptionResultBlock:
        (@Sendable (CKSubscription.ID, Result<CKSubscription, any Error>) -> Void)? = nil
    @Protected public var fetchSubscriptionsResultBlock: (@Sendable (Result<Void, any Error>) -> Void)? = nil

    public override init() {
        super.init()
    }

    public convenience init(subscriptionIDs: [CKSubscription.ID]) {
        self.init()
        self.subscriptionIDs = subscriptionIDs
    }

    /// An operation that fetches every subscription of the database.
    public static func fetchAllSubscriptionsOperation() -> CKFetchSubscriptionsOperation {
        CKFetchSubscriptionsOperation()
    }

    override func execute() async {
        let database = targetDatabase
        var failures: [CKError.PartialItemID: CKError] = [:]
        if let ids = subscriptionIDs {
            for id in ids {
                do {
                    perSubscriptionResultBlock?(id, .success(try await database.subscription(for: id)))
                } catch {
                    let ckError = CKError.wrapping(error)
                    if ckError.code == .operationCancelled {
                        finishReporting(ckError)
                        return
                    }
                    failures[.subscription(id)] = ckError
                    perSubscriptionResultBlock?(id, .failure(ckError))
                }
            }
        } else {
            do {
                for subscription in try await database.allSubscriptions() {
                    perSubscriptionResultBlock?(subscription.subscriptionID, .success(subscription))
                }
            } catch {
                finishReporting(CKError.wrapping(error))
                return
            }
        }
        finishReporting(failures.isEmpty ? cancellationError : CKError.partialFailure(failures))
    }

    override func reportFinal(_ error: CKError?) {
        fetchSubscriptionsResultBlock?(error.map { .failure($0) } ?? .success(()))
    }
}
