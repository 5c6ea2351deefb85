/// What changed in a ``KeyValueStore`` without this device writing it, and why: the
/// `userInfo` of `NSUbiquitousKeyValueStore.didChangeExternallyNotification`.
public struct KeyValueChange: Sendable, Hashable {
    /// `NSUbiquitousKeyValueStoreChangeReasonKey`'s values.
    public enum Reason: Sendable, Hashable {
        /// Another device changed the keys (`NSUbiquitousKeyValueStoreServerChange`).
        case serverChange
        /// The first sync of this device brought the keys (`NSUbiquitousKeyValueStoreInitialSyncChange`).
        case initialSync
        /// A write was refused by the limits, or other devices' writes together went over them;
        /// the keys are the refused one, or the store's keys largest first
        /// (`NSUbiquitousKeyValueStoreQuotaViolationChange`).
        case quotaViolation
        /// The signed-in account changed: the keys the old account had and the new one has
        /// (`NSUbiquitousKeyValueStoreAccountChange`).
        case accountChange
    }

    public var reason: Reason
    /// The keys that changed (`NSUbiquitousKeyValueStoreChangedKeysKey`), sorted.
    public var keys: [String]

    public init(reason: Reason, keys: [String]) {
        self.reason = reason
        self.keys = keys
    }
}
