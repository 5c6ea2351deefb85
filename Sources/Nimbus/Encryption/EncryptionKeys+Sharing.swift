import Crypto
import Foundation
import NimbusCrypto
import NimbusProtocol

/// Encrypted fields in shared zones and hierarchies (docs/ENCRYPTION.md, "Sharing"): the
/// owner wraps each of the zone's keys to every participant's published sharing key, in
/// records of type `NimbusZoneKeyGrant` inside the shared zone (under the share's root for a
/// hierarchy), so that participants read them through their shared database; removing a
/// participant rotates the zone's key for later writes.
extension EncryptionKeys {
    static let grantRecordType = "NimbusZoneKeyGrant"

    /// Gives every participant of `share` that published a sharing key (``publishedKeys(of:in:)``)
    /// each key of the shared zone, wrapped to that key; when a participant who had keys is no
    /// longer one, first rotates the zone's key, so that they can read nothing written after.
    /// ``Database/save(_:rootRecord:)`` and ``Database/save(_:)`` call it for a share of a
    /// container with ``Container/encryption``; call it again when a participant sets up
    /// encryption after being invited.
    /// - Parameter rootRecordID: the root of a hierarchy share read back from the server
    ///   (whose ``Share/rootRecordID`` is `nil`); the grants live under it.
    /// - Returns: the participants that got the keys (those without published keys did not,
    ///   nor those whose directory entry someone else created).
    @discardableResult
    public func shareKeys(for share: Share, rootRecordID: Record.ID? = nil, in database: Database) async throws -> [String] {
        let zoneID = share.id.zoneID
        let (account, owner) = try await owned(zoneID, in: database)
        let container = database.container
        let keys = container.privateCloudDatabase
        _ = try await sealingKey(for: zoneID, in: database)
        let currentID = Self.zoneKeyRecordID(zoneID.zoneName, keyID: nil)
        var current = try await keys.record(for: currentID)
        var root = share.rootRecordID ?? rootRecordID
        if root == nil, !share.isZoneWide, let name = current.fieldValue(forKey: "shareRoot")?.stringValue {
            root = Record.ID(recordName: name, zoneID: zoneID)
        }
        guard share.isZoneWide || root != nil else {
            throw NimbusError(
                .invalidArguments, "a hierarchy share read from the server needs its root record's ID to share keys under it")
        }
        let participants = share.participants.filter { $0.role != .owner && $0.acceptanceStatus != .removed }
            .compactMap { $0.userIdentity.userRecordID?.recordName }.filter { $0 != owner }
        let grantees = Self.strings(current, "grantees")
        let removed = grantees.filter { !participants.contains($0) }
        let context = Self.context(database, zoneID.zoneName, owner)
        if !removed.isEmpty {
            let (key, byID) = try Self.rotate(&current, zone: zoneID.zoneName, account: account, context: context)
            _ = try await keys.save(byID)
            let cache = Self.cacheKey(database, zoneID.zoneName)
            remember(key, cache)
            currentKeys[cache] = key
        }
        var zoneKeysByID: [(String, ZoneKey)] = []
        for id in Self.keyIDs(of: current) {
            guard let bytes = hexBytes(id),
                let key = try await directoryKey(
                    Self.zoneKeyRecordID(zoneID.zoneName, keyID: bytes), zone: zoneID.zoneName, owner: owner,
                    account: account, in: database)
            else { continue }
            zoneKeysByID.append((id, key))
        }
        let currentKeyID = current.fieldValue(forKey: "keyID")?.stringValue
        var grants: [Record] = []
        var granted: [String] = []
        for participant in participants {
            // No entry, or one the participant did not publish (someone else's keys in their
            // name): they get nothing, the others still get their keys.
            let entry: PublishedKeys?
            do {
                entry = try await KeyDirectory.entry(of: participant, in: container)?.keys
            } catch let error as NimbusError where error.code == .decryptionFailed {
                entry = nil
            }
            guard let published = entry else { continue }
            let grantContext = Self.grantContext(container, zoneID.zoneName, owner: owner, participant: participant)
            for (id, key) in zoneKeysByID {
                let wrapped = Data(try WrappedKey.wrap(key, to: published.sharingKey, context: grantContext).bytes)
                var ids = [Self.grantRecordID(zoneID, participant: participant, keyID: key.id)]
                if id == currentKeyID { ids.append(Self.grantRecordID(zoneID, participant: participant, keyID: nil)) }
                for recordID in ids {
                    var grant = Record(recordType: Self.grantRecordType, recordID: recordID)
                    grant["participant"] = participant
                    grant["keyID"] = id
                    grant["wrapped"] = wrapped
                    if let root { grant.parent = Reference(recordID: root) }
                    grants.append(grant)
                }
            }
            granted.append(participant)
        }
        let stale = removed.flatMap { participant in
            [Self.grantRecordID(zoneID, participant: participant, keyID: nil)]
                + zoneKeysByID.map { Self.grantRecordID(zoneID, participant: participant, keyID: $0.1.id) }
        }
        let results = try await database.modifyRecords(
            saving: grants, deleting: stale, savePolicy: .allKeys, atomically: false)
        for case .failure(let error) in results.saveResults.values { throw error }
        current.setFieldValue(.list(elementType: .string, granted.map { .string($0) }), forKey: "grantees")
        if let root, !share.isZoneWide { current["shareRoot"] = root.recordName }
        _ = try await keys.save(current)
        let cache = Self.cacheKey(database, zoneID.zoneName)
        if granted.isEmpty { sharedZones.remove(cache) } else { sharedZones.insert(cache) }
        return granted
    }

    /// A participant's key of a shared zone: the one sealed with `keyID`, or (`nil`) the
    /// current one for new values, from the owner's grants in the zone.
    func grantedKey(for zoneID: ZoneID, keyID: [UInt8]?, in database: Database) async throws -> (ZoneKey, String) {
        let container = database.container
        guard let owner = zoneID.ownerRecordName else {
            throw NimbusError(.invalidArguments, "a zone of the shared database names its owner (ownerRecordName)")
        }
        guard let account = try await accountKey(in: container, required: true) else {
            throw NimbusError(.encryptionKeysMissing, "no account key")
        }
        let me = try await user(of: container)
        let cache = "\(container.identifier)\u{0}\(owner)\u{0}\(zoneID.zoneName)"
        if let keyID, let known = zoneKeys[cache]?.first(where: { $0.id == keyID }) { return (known, owner) }
        let record: Record
        do {
            record = try await database.record(for: Self.grantRecordID(zoneID, participant: me, keyID: keyID))
        } catch let error as NimbusError where error.code == .unknownItem {
            throw NimbusError(
                .encryptionKeysMissing,
                "the owner of zone '\(zoneID.zoneName)' has not given you its key"
                    + (keyID.map { " \(hexString($0))" } ?? "") + " (publish your keys with setUp, then ask them to share again)")
        }
        guard record.lastModifiedUserRecordName == owner, let wrapped = record.fieldValue(forKey: "wrapped")?.bytesValue
        else {
            throw NimbusError(.decryptionFailed, "a key grant of zone '\(zoneID.zoneName)' was not written by its owner")
        }
        let key: ZoneKey
        do {
            key = try WrappedKey(bytes: Array(wrapped)).unwrapZoneKey(
                with: account, context: Self.grantContext(container, zoneID.zoneName, owner: owner, participant: me))
        } catch {
            throw NimbusError(.decryptionFailed, "the key grant of zone '\(zoneID.zoneName)' does not open: \(error.message)")
        }
        if let keyID, key.id != keyID {
            throw NimbusError(.decryptionFailed, "the key grant of zone '\(zoneID.zoneName)' holds another key")
        }
        remember(key, cache)
        return (key, owner)
    }

    /// `grant-<hash of the participant>` for the current key, with `-<key ID>` for each key.
    static func grantRecordID(_ zoneID: ZoneID, participant: String, keyID: [UInt8]?) -> Record.ID {
        let base = "grant-" + hexString(Array(SHA256.hash(data: Data(participant.utf8)).prefix(16)))
        return Record.ID(recordName: keyID.map { base + "-" + hexString($0) } ?? base, zoneID: zoneID)
    }

    static func grantContext(_ container: Container, _ zoneName: String, owner: String, participant: String) -> [String] {
        ["grant", container.identifier, zoneName, owner, participant]
    }

    static func strings(_ record: Record, _ field: String) -> [String] {
        guard case .list(_, let values)? = record.fieldValue(forKey: field) else { return [] }
        return values.compactMap(\.stringValue)
    }
}

/// The bytes of lowercase or uppercase hex; `nil` for anything else.
func hexBytes(_ text: String) -> [UInt8]? {
    guard text.count % 2 == 0 else { return nil }
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        guard let byte = UInt8(text[index..<next], radix: 16) else { return nil }
        bytes.append(byte)
        index = next
    }
    return bytes
}
