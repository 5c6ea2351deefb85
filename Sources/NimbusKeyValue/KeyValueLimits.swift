/// What the store holds at most, per user and container: iCloud's limits by default
/// (1,024 keys, 1 MB in all, 1 MB a value, keys of at most 64 bytes of UTF-8), or the app's own.
///
/// ```swift
/// var limits = KeyValueLimits.iCloud
/// limits.maximumKeys = 64
/// let store = try KeyValueStore(container: container, directory: dir, limits: limits)
/// ```
public struct KeyValueLimits: Sendable, Hashable {
    public var maximumKeys: Int
    /// Bytes of all keys and values together (each value as it travels, ``KeyValueStore/size(ofKey:)``).
    public var maximumTotalBytes: Int
    /// Bytes of one key and its value.
    public var maximumValueBytes: Int
    /// Bytes of a key's UTF-8.
    public var maximumKeyBytes: Int

    public init(maximumKeys: Int, maximumTotalBytes: Int, maximumValueBytes: Int, maximumKeyBytes: Int) {
        self.maximumKeys = maximumKeys
        self.maximumTotalBytes = maximumTotalBytes
        self.maximumValueBytes = maximumValueBytes
        self.maximumKeyBytes = maximumKeyBytes
    }

    /// `NSUbiquitousKeyValueStore`'s limits.
    public static let iCloud = KeyValueLimits(
        maximumKeys: 1024, maximumTotalBytes: 1 << 20, maximumValueBytes: 1 << 20, maximumKeyBytes: 64)

    /// Why writing `size` bytes under `key` would break a limit, given the `sizes` every key
    /// holds now; `nil` when it fits. The one rule the store checks writes and fetches with.
    func violation(key: String, size: Int, in sizes: [String: Int]) -> KeyValueError? {
        if key.isEmpty || key.utf8.count > maximumKeyBytes { return .invalidKey(key, maximumBytes: maximumKeyBytes) }
        if size > maximumValueBytes { return .quotaExceeded(key, "its value is \(size) bytes, the most is \(maximumValueBytes)") }
        let keys = sizes[key] == nil ? sizes.count + 1 : sizes.count
        if keys > maximumKeys { return .quotaExceeded(key, "the store would hold \(keys) keys, the most is \(maximumKeys)") }
        let total = sizes.values.reduce(0, +) - (sizes[key] ?? 0) + size
        if total > maximumTotalBytes {
            return .quotaExceeded(key, "the store would hold \(total) bytes, the most is \(maximumTotalBytes)")
        }
        return nil
    }
}

/// Why the store refused a write.
public enum KeyValueError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An empty key, or one longer than the limit: use a shorter key.
    case invalidKey(String, maximumBytes: Int)
    /// The write would break ``KeyValueLimits``: remove keys or store less; the store is unchanged.
    case quotaExceeded(String, String)

    public var description: String {
        switch self {
        case .invalidKey(let key, let maximum):
            "key \"\(key.prefix(80))\" is \(key.utf8.count) bytes of UTF-8; a key is 1 to \(maximum) bytes"
        case .quotaExceeded(let key, let reason):
            "\"\(key.prefix(80))\" was not stored: \(reason); remove keys or store less"
        }
    }
}
