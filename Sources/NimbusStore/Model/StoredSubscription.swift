import NimbusProtocol

/// A subscription as the store keeps it: the definition and the user it belongs to.
///
/// In a private database every subscription belongs to the database's owner. In the public
/// database each user's subscriptions are their own: they see only those, and only they are
/// notified.
public struct StoredSubscription: Sendable, Hashable {
    public var subscription: SubscriptionDefinition
    /// The user record name of the subscriber: who is notified.
    public var owner: String
    /// Milliseconds since the epoch.
    public var createdAt: Int64

    public init(subscription: SubscriptionDefinition, owner: String, createdAt: Int64) {
        self.subscription = subscription
        self.owner = owner
        self.createdAt = createdAt
    }
}

/// One operation of `subscriptions/modify`.
public enum SubscriptionOperation: Sendable, Hashable {
    /// Creates the subscription, or replaces the one with the same ID.
    case save(SubscriptionDefinition)
    case delete(subscriptionID: String)

    public var subscriptionID: String {
        switch self {
        case .save(let subscription): return subscription.subscriptionID
        case .delete(let id): return id
        }
    }
}

/// The outcome of one subscription operation, in request order.
public enum SubscriptionResult: Sendable, Equatable {
    case saved(SubscriptionDefinition)
    case deleted(subscriptionID: String)
    case failed(subscriptionID: String, error: CloudKitError)
}
