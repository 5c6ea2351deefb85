import Foundation
import Nimbus
import NimbusKeyValue

/// iCloud's key-value store, as Foundation names it, on the Nimbus server of
/// ``NimbusConnection/current``: code written for `NSUbiquitousKeyValueStore` runs unchanged
/// with `import NimbusCloudKit` (on Apple platforms this class shadows Foundation's for the
/// files that import NimbusCloudKit).
///
/// ```swift
/// let store = NSUbiquitousKeyValueStore.default
/// NotificationCenter.default.addObserver(
///     forName: NSUbiquitousKeyValueStore.didChangeExternallyNotification, object: store, queue: nil
/// ) { note in
///     let keys = note.userInfo?[NSUbiquitousKeyValueStoreChangedKeysKey] as? [String] ?? []
///     …
/// }
/// store.set("dark", forKey: "theme")
/// store.synchronize()
/// ```
///
/// Syncing starts with the first ``synchronize()`` call, as Apple asks apps to make at launch
/// (after adding their observer). `default` syncs the keys of the signed-in user (`NIMBUS_WEB_AUTH_TOKEN`) in the default
/// container (`NIMBUS_CONTAINER`), and keeps this device's copy in `NIMBUS_KEY_VALUE_DIRECTORY`
/// (else Application Support's `Nimbus/KeyValue/<container>`). With no server configured it
/// keeps the values on the device only, as Foundation's does without an iCloud account.
/// The store underneath is ``NimbusKeyValue/KeyValueStore``: one record per key in zone
/// `NimbusKeyValue` of the private database (docs/KEY-VALUE.md).
public final class NSUbiquitousKeyValueStore: NSObject, Sendable {
    /// Posted on `NotificationCenter.default` when other devices, the first sync, an account
    /// change or the limits changed keys; its `userInfo` has ``NSUbiquitousKeyValueStoreChangeReasonKey``
    /// and ``NSUbiquitousKeyValueStoreChangedKeysKey``.
    public static let didChangeExternallyNotification = Notification.Name(
        "NSUbiquitousKeyValueStoreDidChangeExternallyNotification")

    /// The app's store (see the type's discussion for where it syncs and keeps its copy).
    public static var `default`: NSUbiquitousKeyValueStore { shared }

    private static let shared = NSUbiquitousKeyValueStore(
        connection: NimbusConnection.current, directory: defaultDirectory())

    /// The store underneath; `nil` only when no local copy could be opened (writes are then
    /// dropped and reads answer nothing).
    public let keyValueStore: KeyValueStore?
    private let relay: Task<Void, Never>?
    /// The SDK container the store syncs with; `nil` on the device only.
    private let container: Container?
    /// Whether ``synchronize()`` started the first sync and the push channel.
    private let started = Locked(false)

    /// A store syncing the default container of `connection` (or on the device only, with
    /// `nil`), its copy in `directory`.
    public init(connection: NimbusConnection?, directory: URL) {
        let store: KeyValueStore?
        let container = connection.flatMap { connection in
            connection.defaultContainerIdentifier.map { connection.container(identifier: $0) }
        }
        if let container, connection?.webAuthToken != nil {
            store = try? KeyValueStore(container: container, directory: directory.path)
        } else {
            store = try? KeyValueStore(localDirectory: directory.path)
        }
        keyValueStore = store
        self.container = container
        guard let store else {
            relay = nil
            super.init()
            return
        }
        let changes = store.changes()
        // Weak: the relay task must not keep its store alive.
        let relayed = Locked(WeakStore())
        relay = Task {
            for await change in changes {
                guard let sender = relayed.current.store else { continue }
                NotificationCenter.default.post(
                    name: Self.didChangeExternallyNotification, object: sender,
                    userInfo: [
                        NSUbiquitousKeyValueStoreChangeReasonKey: Self.reasonCode(change.reason),
                        NSUbiquitousKeyValueStoreChangedKeysKey: change.keys,
                    ])
            }
        }
        super.init()
        relayed.withLock { $0.store = self }
    }

    private struct WeakStore: Sendable {
        weak var store: NSUbiquitousKeyValueStore?
    }

    deinit { relay?.cancel() }

    /// Application Support's `Nimbus/KeyValue/<container>`, or `NIMBUS_KEY_VALUE_DIRECTORY`.
    static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let directory = environment["NIMBUS_KEY_VALUE_DIRECTORY"], !directory.isEmpty {
            return URL(fileURLWithPath: directory, isDirectory: true)
        }
        let base =
            FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        let container = NimbusConnection.current?.defaultContainerIdentifier ?? "default"
        return base.appendingPathComponent("Nimbus/KeyValue", isDirectory: true)
            .appendingPathComponent(container, isDirectory: true)
    }

    static func reasonCode(_ reason: KeyValueChange.Reason) -> Int {
        switch reason {
        case .serverChange: NSUbiquitousKeyValueStoreServerChange
        case .initialSync: NSUbiquitousKeyValueStoreInitialSyncChange
        case .quotaViolation: NSUbiquitousKeyValueStoreQuotaViolationChange
        case .accountChange: NSUbiquitousKeyValueStoreAccountChange
        }
    }

    // MARK: - Reading

    /// The value of `aKey`: a `String`, `Int64`, `Double`, `Bool`, `Date`, `Data`, or an array
    /// or dictionary of them; `nil` if absent.
    public func object(forKey aKey: String) -> Any? {
        keyValueStore?.object(forKey: aKey).map(Self.object(from:))
    }

    public func string(forKey aKey: String) -> String? { keyValueStore?.string(forKey: aKey) }
    public func array(forKey aKey: String) -> [Any]? { keyValueStore?.array(forKey: aKey)?.map(Self.object(from:)) }
    public func dictionary(forKey aKey: String) -> [String: Any]? {
        keyValueStore?.dictionary(forKey: aKey)?.mapValues(Self.object(from:))
    }
    public func data(forKey aKey: String) -> Data? { keyValueStore?.data(forKey: aKey) }
    public func longLong(forKey aKey: String) -> Int64 { keyValueStore?.longLong(forKey: aKey) ?? 0 }
    public func double(forKey aKey: String) -> Double { keyValueStore?.double(forKey: aKey) ?? 0 }
    public func bool(forKey aKey: String) -> Bool { keyValueStore?.bool(forKey: aKey) ?? false }

    /// Every key and its value.
    public var dictionaryRepresentation: [String: Any] {
        (keyValueStore?.dictionaryRepresentation ?? [:]).mapValues(Self.object(from:))
    }

    // MARK: - Writing

    /// Sets `aKey` to `anObject` (`nil` removes it). A value of a type the store cannot hold,
    /// or one beyond the limits, is not stored; the limits' refusal is posted as
    /// ``NSUbiquitousKeyValueStoreQuotaViolationChange``, as Foundation's store does.
    public func set(_ anObject: Any?, forKey aKey: String) {
        guard let anObject else { return removeObject(forKey: aKey) }
        guard let value = Self.keyValue(from: anObject) else { return }
        try? keyValueStore?.set(value, forKey: aKey)
    }

    public func set(_ aString: String?, forKey aKey: String) { try? keyValueStore?.set(aString, forKey: aKey) }
    public func set(_ aData: Data?, forKey aKey: String) { try? keyValueStore?.set(aData, forKey: aKey) }
    public func set(_ anArray: [Any]?, forKey aKey: String) { set(anArray as Any?, forKey: aKey) }
    public func set(_ aDictionary: [String: Any]?, forKey aKey: String) { set(aDictionary as Any?, forKey: aKey) }
    public func set(_ value: Int64, forKey aKey: String) { try? keyValueStore?.set(value, forKey: aKey) }
    public func set(_ value: Double, forKey aKey: String) { try? keyValueStore?.set(value, forKey: aKey) }
    public func set(_ value: Bool, forKey aKey: String) { try? keyValueStore?.set(value, forKey: aKey) }

    public func removeObject(forKey aKey: String) { try? keyValueStore?.removeObject(forKey: aKey) }

    /// Starts sending this device's writes and fetching the others' (it does not wait for the
    /// network, as Foundation's does not); `true` when the store is open. Writes are on the
    /// device's disk as soon as they are made.
    @discardableResult
    public func synchronize() -> Bool {
        guard let store = keyValueStore else { return false }
        let first = started.withLock { started in
            defer { started = true }
            return !started
        }
        let container = self.container
        Task {
            if first, let container {
                // The first call starts syncing (as an app calls it at launch, after adding
                // its observer): the initial sync's notification reaches that observer.
                try? await store.start()
                await store.listen(to: PushClient(container: container))
            }
            await store.synchronize()
        }
        return true
    }

    // MARK: - Values

    static func keyValue(from object: Any) -> KeyValue? {
        switch object {
        case let value as KeyValue: value
        case let value as String: .string(value)
        case let value as Bool: .bool(value)
        case let value as Int: .int64(Int64(value))
        case let value as Int64: .int64(value)
        case let value as Int32: .int64(Int64(value))
        case let value as UInt32: .int64(Int64(value))
        case let value as Double: .double(value)
        case let value as Float: .double(Double(value))
        case let value as Date: .date(value)
        case let value as Data: .data(value)
        case let value as NSNumber: .double(value.doubleValue)
        case let values as [Any]:
            values.map(keyValue(from:)).allSatisfy { $0 != nil } ? .array(values.compactMap(keyValue(from:))) : nil
        case let values as [String: Any]:
            values.mapValues(keyValue(from:)).values.allSatisfy { $0 != nil }
                ? .dictionary(values.compactMapValues(keyValue(from:))) : nil
        default: nil
        }
    }

    static func object(from value: KeyValue) -> Any {
        switch value {
        case .string(let value): value
        case .int64(let value): value
        case .double(let value): value
        case .bool(let value): value
        case .date(let value): value
        case .data(let value): value
        case .array(let values): values.map(object(from:))
        case .dictionary(let values): values.mapValues(object(from:))
        }
    }
}

/// The `userInfo` key of ``NSUbiquitousKeyValueStore/didChangeExternallyNotification`` that
/// holds why the keys changed: one of the four reasons below.
public let NSUbiquitousKeyValueStoreChangeReasonKey = "NSUbiquitousKeyValueStoreChangeReasonKey"
/// The `userInfo` key of ``NSUbiquitousKeyValueStore/didChangeExternallyNotification`` that
/// holds the changed keys, as `[String]`.
public let NSUbiquitousKeyValueStoreChangedKeysKey = "NSUbiquitousKeyValueStoreChangedKeysKey"
/// Another device changed the keys.
public let NSUbiquitousKeyValueStoreServerChange = 0
/// This device's first sync brought the keys.
public let NSUbiquitousKeyValueStoreInitialSyncChange = 1
/// A write went beyond the store's limits.
public let NSUbiquitousKeyValueStoreQuotaViolationChange = 2
/// The signed-in account changed.
public let NSUbiquitousKeyValueStoreAccountChange = 3
