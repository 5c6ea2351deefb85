import Crypto
import Foundation
import NimbusCrypto
import NimbusProtocol

/// A user's end-to-end encryption keys on this device (docs/ENCRYPTION.md, "Key hierarchy"):
/// the account key (kept by a ``DeviceKeyStore``), and the zone keys, which the server keeps
/// sealed by the account key in the user's key directory (the private zone
/// ``keysZoneName``) so that every enrolled device reads them and the server reads none.
///
/// ```swift
/// var container = Container(identifier: id, baseURL: url, credentials: credentials)
/// container.encryption = EncryptionKeys(store: FileKeyStore(directory: keysDirectory))
/// if let recovery = try await container.encryption!.setUp(in: container) {
///     show(recovery.text)          // first device: the user writes it down
/// }
/// ```
///
/// A device of an account set up elsewhere gets ``NimbusError/Code/encryptionKeysMissing``
/// from ``setUp(in:)`` until it is enrolled (``restore(recoveryKey:in:)``).
public actor EncryptionKeys {
    /// The private zone that holds the user's key directory.
    public static let keysZoneName = "NimbusKeys"
    static let accountRecordName = "account"
    static let accountRecordType = "NimbusAccountKey"
    static let zoneKeyRecordType = "NimbusZoneKey"

    public nonisolated let store: any DeviceKeyStore
    /// By container identifier (one key store may serve several containers).
    var accounts: [String: KeyAgreementIdentity] = [:]
    private var users: [String: String] = [:]
    /// Every zone key this device opened, by ``cacheKey(_:_:)``.
    var zoneKeys: [String: [ZoneKey]] = [:]
    /// The key new values of a zone are sealed with, by ``cacheKey(_:_:)``.
    var currentKeys: [String: ZoneKey] = [:]
    /// The zones (by ``cacheKey(_:_:)``) whose keys were given to participants when this
    /// device last read them: their current key is read again at each save, so that a
    /// rotation another device made when removing a participant takes effect at once.
    var sharedZones: Set<String> = []
    /// The containers whose account another device reset: this device's key is stale.
    var resetElsewhere: Set<String> = []
    /// The containers whose account revoked this device (seen while it ran): it seals and
    /// opens nothing more.
    var revokedHere: Set<String> = []
    /// The enrolment offers this device made, by offer ID (hex): each answers once.
    var enrolmentOffers: [String: EnrolmentOffer] = [:]

    public init(store: any DeviceKeyStore) {
        self.store = store
    }

    /// Makes this device ready to seal and open: the first time for the account, creates the
    /// account key and returns the recovery key the user must keep (shown once); on a device
    /// already set up, returns `nil`.
    /// - Throws: ``NimbusError/Code/encryptionKeysMissing`` when the account's encryption was
    ///   set up on another device and this one holds no key: enrol it.
    @discardableResult
    public func setUp(in container: Container) async throws -> RecoveryKey? {
        let user = try await user(of: container)
        let local = try store.accountKey(user: user, container: container.identifier)
            .map { bytes throws(EncryptionError) in try KeyAgreementIdentity(privateBytes: bytes) }
        let database = container.privateCloudDatabase
        if let published = try await accountRecord(in: database) {
            guard let local, published.fieldValue(forKey: "publicKey")?.bytesValue == Data(local.publicBytes) else {
                if let publicKey = published.fieldValue(forKey: "publicKey")?.bytesValue,
                    try await adoptRotatedAccount(publicKey: Array(publicKey), user: user, in: container)
                {
                    return nil
                }
                throw NimbusError(
                    .encryptionKeysMissing,
                    "this account's encryption keys were set up on another device: enrol this device with a code from "
                        + "that device, or with the recovery key")
            }
            forgetKeys(of: container)
            accounts[container.identifier] = local
            try await registerThisDevice(account: local, user: user, in: container)
            return nil
        }
        let identity = local ?? KeyAgreementIdentity()
        let recovery = RecoveryKey()
        try await database.save(RecordZone(zoneID: Self.keysZone))
        var record = Record(recordType: Self.accountRecordType, recordID: Self.accountRecordID)
        record["publicKey"] = Data(identity.publicBytes)
        record["recovery"] = Data(try recovery.seal(identity, user: user, container: container.identifier))
        do {
            try await database.save(record)
        } catch let error as NimbusError where error.code == .serverRecordChanged {
            throw NimbusError(
                .encryptionKeysMissing, "another device set up this account's encryption meanwhile: enrol this device")
        }
        try store.setAccountKey(identity.privateBytes, user: user, container: container.identifier)
        forgetKeys(of: container)
        accounts[container.identifier] = identity
        try await registerThisDevice(account: identity, user: user, in: container)
        return recovery
    }

    /// Restores the account key on this device from the recovery key the user kept.
    /// - Throws: ``NimbusError/Code/decryptionFailed`` for another recovery key (nothing is
    ///   stored); ``NimbusError/Code/encryptionKeysMissing`` when the account has no keys yet.
    public func restore(recoveryKey text: String, in container: Container) async throws {
        let user = try await user(of: container)
        guard let published = try await accountRecord(in: container.privateCloudDatabase),
            let sealed = published.fieldValue(forKey: "recovery")?.bytesValue,
            let publicKey = published.fieldValue(forKey: "publicKey")?.bytesValue
        else {
            throw NimbusError(.encryptionKeysMissing, "this account has no encryption keys to restore; set them up")
        }
        let identity: KeyAgreementIdentity
        do {
            identity = try RecoveryKey(text: text).open(Array(sealed), user: user, container: container.identifier)
        } catch {
            throw NimbusError(.decryptionFailed, "the recovery key does not open this account's key: \(error.message)")
        }
        guard Data(identity.publicBytes) == publicKey else {
            throw NimbusError(.decryptionFailed, "the recovered key is not the account's published key")
        }
        try store.setAccountKey(identity.privateBytes, user: user, container: container.identifier)
        forgetKeys(of: container)
        accounts[container.identifier] = identity
        try await registerThisDevice(account: identity, user: user, in: container)
    }

    /// Whether this device holds the account key (after ``setUp(in:)`` or an enrolment).
    public func isReady(in container: Container) async throws -> Bool {
        try await accountKey(in: container, required: false) != nil
    }

    // MARK: - Zone keys

    /// The key to seal new values of a private zone with, and the zone's owner: the zone's
    /// current key from the key directory, or a new one published there.
    package func sealingKey(for zoneID: ZoneID, in database: Database) async throws -> (key: ZoneKey, owner: String) {
        if database.scope == .shared {
            let (key, owner) = try await grantedKey(for: zoneID, keyID: nil, in: database)
            return (key, owner)
        }
        return try await withCurrentAccount(of: zoneID, in: database) { (account, owner) -> (key: ZoneKey, owner: String) in
            try await ownSealingKey(for: zoneID, account: account, owner: owner, in: database)
        }
    }

    /// ``sealingKey(for:in:)`` in one of this user's own zones.
    private func ownSealingKey(
        for zoneID: ZoneID, account: KeyAgreementIdentity, owner: String, in database: Database
    ) async throws -> (key: ZoneKey, owner: String) {
        let cache = Self.cacheKey(database, zoneID.zoneName)
        if let key = currentKeys[cache], !sharedZones.contains(cache) { return (key, owner) }
        let keys = database.container.privateCloudDatabase
        let currentID = Self.zoneKeyRecordID(zoneID.zoneName, keyID: nil)
        for _ in 0..<2 {
            if let key = try await directoryKey(currentID, zone: zoneID.zoneName, owner: owner, account: account, in: database) {
                currentKeys[cache] = key
                return (key, owner)
            }
            let key = ZoneKey()
            let sealed = try SelfWrappedKey.wrap(key, account: account, context: Self.context(database, zoneID.zoneName, owner))
            var records: [Record] = []
            for id in [currentID, Self.zoneKeyRecordID(zoneID.zoneName, keyID: key.id)] {
                var record = Record(recordType: Self.zoneKeyRecordType, recordID: id)
                record["zoneName"] = zoneID.zoneName
                record["keyID"] = key.idHex
                record["wrapped"] = Data(sealed)
                records.append(record)
            }
            try await keys.save(RecordZone(zoneID: Self.keysZone))
            let results = try await keys.modifyRecords(saving: records, atomically: true)
            switch results.saveResults[currentID] {
            case .success?:
                remember(key, cache)
                currentKeys[cache] = key
                return (key, owner)
            case .failure(let error)? where error.code == .serverRecordChanged || error.code == .batchRequestFailed:
                continue  // another device published the zone's first key meanwhile: read that one
            case .failure(let error)?:
                throw error
            case nil:
                throw NimbusError(.serverRejectedRequest, "the key directory's save answered nothing for the zone key")
            }
        }
        throw NimbusError(.encryptionKeysMissing, "the key directory has no usable key for zone '\(zoneID.zoneName)'")
    }

    /// The keys that may open a value of a zone sealed with key `id`, and the zone's owner.
    func openingKeys(for zoneID: ZoneID, keyID id: [UInt8], in database: Database) async throws
        -> (keys: [ZoneKey], owner: String)
    {
        if database.scope == .shared {
            let (key, owner) = try await grantedKey(for: zoneID, keyID: id, in: database)
            return ([key], owner)
        }
        let cache = Self.cacheKey(database, zoneID.zoneName)
        return try await withCurrentAccount(of: zoneID, in: database) { (account, owner) -> (keys: [ZoneKey], owner: String) in
            let known = zoneKeys[cache] ?? []
            if known.contains(where: { $0.id == id }) { return (known, owner) }
            let recordID = Self.zoneKeyRecordID(zoneID.zoneName, keyID: id)
            guard let key = try await directoryKey(recordID, zone: zoneID.zoneName, owner: owner, account: account, in: database),
                key.id == id
            else {
                throw NimbusError(
                    .encryptionKeysMissing,
                    "zone '\(zoneID.zoneName)' holds values sealed with a key (\(hexString(id))) that the key directory does "
                        + "not give this account: the zone was reset or its key is lost")
            }
            // A key this device did not know: another device rotated the zone's key (a
            // participant removed, a device revoked). New values take the new current key.
            currentKeys[cache] = nil
            return (zoneKeys[cache] ?? [key], owner)
        }
    }

    // MARK: - Helpers

    static let keysZone = ZoneID(zoneName: keysZoneName)
    static let accountRecordID = Record.ID(recordName: accountRecordName, zoneID: keysZone)

    /// The record of a zone key: `zone-<hash of the zone name>` for the current key, with
    /// `-<key ID>` for each key by ID (record names stay short whatever the zone's name).
    static func zoneKeyRecordID(_ zoneName: String, keyID: [UInt8]?) -> Record.ID {
        let digest = SHA256.hash(data: Data(zoneName.utf8)).prefix(16)
        let base = "zone-" + hexString(Array(digest))
        return Record.ID(recordName: keyID.map { base + "-" + hexString($0) } ?? base, zoneID: keysZone)
    }

    /// What a zone key is bound to in the directory: the container, zone and owner.
    static func context(_ database: Database, _ zoneName: String, _ owner: String) -> [String] {
        ["zone", database.container.identifier, zoneName, owner]
    }

    /// Where the caches keep a zone's keys: its container and name.
    static func cacheKey(_ database: Database, _ zoneName: String) -> String {
        "\(database.container.identifier)\u{0}\(zoneName)"
    }

    func remember(_ key: ZoneKey, _ cache: String) {
        if !(zoneKeys[cache] ?? []).contains(where: { $0.id == key.id }) { zoneKeys[cache, default: []].append(key) }
    }

    /// A zone key from the directory (`nil`: no such record), checked to be the account's own.
    func directoryKey(
        _ recordID: Record.ID, zone: String, owner: String, account: KeyAgreementIdentity, in database: Database
    ) async throws -> ZoneKey? {
        let record: Record
        do {
            record = try await database.container.privateCloudDatabase.record(for: recordID)
        } catch let error as NimbusError where error.code == .unknownItem || error.code == .zoneNotFound {
            return nil
        }
        guard let sealed = record.fieldValue(forKey: "wrapped")?.bytesValue else {
            throw NimbusError(.decryptionFailed, "the key directory's record '\(recordID.recordName)' holds no key")
        }
        do {
            let key = try SelfWrappedKey.unwrap(Array(sealed), account: account, context: Self.context(database, zone, owner))
            let cache = Self.cacheKey(database, zone)
            remember(key, cache)
            if recordID == Self.zoneKeyRecordID(zone, keyID: nil) {
                if Self.strings(record, "grantees").isEmpty { sharedZones.remove(cache) } else { sharedZones.insert(cache) }
            }
            return key
        } catch {
            throw NimbusError(
                .decryptionFailed, "the key directory's key for zone '\(zone)' does not open with this account's key: \(error)")
        }
    }

    /// The account key and the owner of a zone whose keys this account holds (its private zones).
    func owned(_ zoneID: ZoneID, in database: Database) async throws -> (KeyAgreementIdentity, String) {
        guard database.scope == .private else {
            throw NimbusError(
                .encryptionKeysMissing,
                "encrypted fields of the \(database.scope.rawValue) database: this version seals and opens them in the "
                    + "private database only")
        }
        guard let account = try await accountKey(in: database.container, required: true) else {
            throw NimbusError(.encryptionKeysMissing, "no account key")
        }
        return (account, try await user(of: database.container))
    }

    func accountKey(in container: Container, required: Bool) async throws -> KeyAgreementIdentity? {
        if resetElsewhere.contains(container.identifier) {
            guard !required else { throw Self.resetOnAnotherDevice() }
            return nil
        }
        if revokedHere.contains(container.identifier) {
            guard !required else { throw Self.revoked() }
            return nil
        }
        if let account = accounts[container.identifier] { return account }
        let user = try await user(of: container)
        if let bytes = try store.accountKey(user: user, container: container.identifier) {
            let identity = try KeyAgreementIdentity(privateBytes: bytes)
            accounts[container.identifier] = identity
            return identity
        }
        guard !required else {
            throw NimbusError(
                .encryptionKeysMissing,
                "this device holds no encryption key for this account: set it up, or enrol this device with a code "
                    + "from another device or with the recovery key")
        }
        return nil
    }

    func user(of container: Container) async throws -> String {
        if let name = users[container.identifier] { return name }
        let name = try await container.userRecordID().recordName
        users[container.identifier] = name
        return name
    }

    func accountRecord(in database: Database) async throws -> Record? {
        do {
            return try await database.record(for: Self.accountRecordID)
        } catch let error as NimbusError where error.code == .unknownItem || error.code == .zoneNotFound {
            return nil
        }
    }
}

/// Lowercase hex of key IDs and hashes (never of keys).
func hexString(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}
