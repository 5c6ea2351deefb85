import NimbusProtocol

extension Database {
    /// Every subscription of the database (`subscriptions/list`).
    public func allSubscriptions() async throws -> [Subscription] {
        let response = try await send("subscriptions/list", method: .get, body: nil)
        guard let items = response["subscriptions"]?.array else {
            throw NimbusError.malformedResponse("subscriptions/list returned no subscriptions array")
        }
        return try items.map { try Subscription(wire: $0) }
    }

    /// One subscription (`subscriptions/lookup`).
    /// - Throws: ``NimbusError/Code/unknownItem``.
    public func subscription(for subscriptionID: Subscription.ID) async throws -> Subscription {
        let response = try await send(
            "subscriptions/lookup",
            body: .object(["subscriptions": .array([.object(["subscriptionID": .string(subscriptionID)])])]))
        let items = try Self.items(response, "subscriptions", count: 1)
        if let error = NimbusError(wire: items[0]) { throw error }
        return try Subscription(wire: items[0])
    }

    /// Creates or replaces a subscription.
    @discardableResult
    public func save(_ subscription: Subscription) async throws -> Subscription {
        let results = try await modifySubscriptions(saving: [subscription], deleting: [])
        return try results.saveResults[subscription.id, default: .failure(.malformedResponse("no result"))].get()
    }

    /// Deletes a subscription.
    @discardableResult
    public func deleteSubscription(withID subscriptionID: Subscription.ID) async throws -> Subscription.ID {
        let results = try await modifySubscriptions(saving: [], deleting: [subscriptionID])
        try results.deleteResults[subscriptionID, default: .failure(.malformedResponse("no result"))].get()
        return subscriptionID
    }

    /// Saves and deletes subscriptions in one request (`subscriptions/modify`).
    public func modifySubscriptions(
        saving subscriptionsToSave: [Subscription], deleting subscriptionIDsToDelete: [Subscription.ID]
    ) async throws -> (
        saveResults: [Subscription.ID: Result<Subscription, NimbusError>],
        deleteResults: [Subscription.ID: Result<Void, NimbusError>]
    ) {
        let operations: [JSON] =
            subscriptionsToSave.map { .object(["operationType": "create", "subscription": $0.wireJSON]) }
            + subscriptionIDsToDelete.map {
                .object(["operationType": "delete", "subscription": .object(["subscriptionID": .string($0)])])
            }
        let response = try await send("subscriptions/modify", body: .object(["operations": .array(operations)]))
        let items = try Self.items(response, "subscriptions", count: operations.count)
        var saveResults: [Subscription.ID: Result<Subscription, NimbusError>] = [:]
        var deleteResults: [Subscription.ID: Result<Void, NimbusError>] = [:]
        for (subscription, item) in zip(subscriptionsToSave, items) {
            if let error = NimbusError(wire: item) {
                saveResults[subscription.id] = .failure(error)
            } else {
                saveResults[subscription.id] = Result { () throws(NimbusError) in
                    do { return try Subscription(wire: item) } catch {
                        throw error as? NimbusError ?? .malformedResponse("\(error)")
                    }
                }
            }
        }
        for (id, item) in zip(subscriptionIDsToDelete, items.dropFirst(subscriptionsToSave.count)) {
            deleteResults[id] = NimbusError(wire: item).map { .failure($0) } ?? .success(())
        }
        return (saveResults, deleteResults)
    }
}
