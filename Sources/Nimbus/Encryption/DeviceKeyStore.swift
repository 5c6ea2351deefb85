import Crypto
import Foundation

/// Where a device keeps a user's account key (the private half of their Curve25519 key
/// agreement pair, 32 bytes): it never leaves the device except sealed (to a new device, or
/// with the recovery key). ``FileKeyStore`` on every platform; ``KeychainKeyStore`` on
/// Apple platforms.
public protocol DeviceKeyStore: Sendable {
    /// The account key of `user` in `container`, or `nil` when this device has none.
    func accountKey(user: String, container: String) throws -> [UInt8]?
    /// Stores (or with `nil` forgets) the account key of `user` in `container`.
    func setAccountKey(_ key: [UInt8]?, user: String, container: String) throws
}

/// Account keys in files of a directory only this user of the system reads (the directory
/// `0700`, each file `0600`, written atomically; on Apple platforms with complete file
/// protection). Use the app's private support directory; it must not be backed up in clear
/// or synced elsewhere.
///
/// ```swift
/// let keys = FileKeyStore(directory: appSupport.appendingPathComponent("nimbus-keys"))
/// ```
public struct FileKeyStore: DeviceKeyStore {
    public let directory: URL

    public init(directory: URL) {
        self.directory = directory
    }

    public func accountKey(user: String, container: String) throws -> [UInt8]? {
        let url = file(user: user, container: container)
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        return Array(try Data(contentsOf: url))
    }

    public func setAccountKey(_ key: [UInt8]?, user: String, container: String) throws {
        let url = file(user: user, container: container)
        guard let key else {
            if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
            return
        }
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
        var options: Data.WritingOptions = [.atomic]
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            options.insert(.completeFileProtection)
        #endif
        try Data(key).write(to: url, options: options)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
    }

    /// One file per user and container, named by a hash of both (names in file names leak
    /// nothing and need no escaping).
    func file(user: String, container: String) -> URL {
        let digest = SHA256.hash(data: Data("\(container)\u{0}\(user)".utf8))
        let name = digest.prefix(16).map { String(format: "%02x", $0) }.joined()
        return directory.appendingPathComponent("account-\(name).key")
    }
}

#if canImport(Security)
    import Security

    /// Account keys in the Keychain: generic passwords of service `nimbus.account-key`,
    /// readable after the first unlock, on this device only (never in a Keychain backup or
    /// iCloud Keychain: another device enrols by code or recovery key).
    public struct KeychainKeyStore: DeviceKeyStore {
        public let service: String

        public init(service: String = "nimbus.account-key") {
            self.service = service
        }

        public func accountKey(user: String, container: String) throws -> [UInt8]? {
            var query = base(user: user, container: container)
            query[kSecReturnData as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            var item: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &item)
            if status == errSecItemNotFound { return nil }
            guard status == errSecSuccess, let data = item as? Data else { throw KeychainError(status: status) }
            return Array(data)
        }

        public func setAccountKey(_ key: [UInt8]?, user: String, container: String) throws {
            let query = base(user: user, container: container)
            let deleted = SecItemDelete(query as CFDictionary)
            guard deleted == errSecSuccess || deleted == errSecItemNotFound else { throw KeychainError(status: deleted) }
            guard let key else { return }
            var item = query
            item[kSecValueData as String] = Data(key)
            item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            let status = SecItemAdd(item as CFDictionary, nil)
            guard status == errSecSuccess else { throw KeychainError(status: status) }
        }

        private func base(user: String, container: String) -> [String: Any] {
            [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                kSecAttrAccount as String: "\(container)/\(user)",
            ]
        }
    }

    /// A Keychain call that failed, with its `OSStatus`.
    public struct KeychainError: Error, Sendable, CustomStringConvertible {
        public let status: OSStatus
        public var description: String { "Keychain error \(status)" }
    }
#endif
