import Foundation
import NimbusCrypto
import NimbusProtocol

extension Database {
    /// `records` with the values of their ``Record/encryptedKeys`` that a save under `policy`
    /// sends sealed with their zones' keys (as `ENCRYPTED_BYTES`), ready to send; records
    /// without encrypted fields to send as given (an encrypted field the save does not send is
    /// not sealed: its value stays the app's).
    /// - Throws: ``NimbusError/Code/invalidArguments`` for encrypted fields in the public
    ///   database or holding a reference; ``NimbusError/Code/encryptionKeysMissing`` without
    ///   ``Container/encryption`` or its keys.
    func sealed(_ records: [Record], policy: SavePolicy) async throws -> [Record] {
        guard records.contains(where: { record in record.encryptedKeys.contains { record.values[$0] != nil } }) else {
            return records
        }
        guard scope != .public else {
            throw NimbusError(
                .invalidArguments, "the public database holds no encrypted fields (as in CloudKit): use a private zone")
        }
        let keys = try encryptionKeys()
        // What each save sends of its encrypted fields, worked out once.
        let fields = records.map { Self.sealableFields(of: $0, policy: policy) }
        // One key lookup per zone, not per record.
        var found: [ZoneID: SealingKey] = [:]
        for (record, sent) in zip(records, fields) where !sent.isEmpty && found[record.id.zoneID] == nil {
            let (key, owner) = try await keys.sealingKey(for: record.id.zoneID, in: self)
            found[record.id.zoneID] = SealingKey(key: key, owner: owner)
        }
        // Sealing is CPU alone: a large batch is sealed in slices, one per core, while the
        // order of the records is kept.
        let (container, zoneKeys) = (container.identifier, found)
        let lanes = min(Self.cores, records.count / Self.recordsPerSealingLane)
        guard lanes > 1 else { return try Self.seal(records[...], fields: fields[...], zoneKeys, container: container) }
        let size = (records.count + lanes - 1) / lanes
        return try await withThrowingTaskGroup(of: (Int, [Record]).self) { group in
            for lane in 0..<lanes {
                let range = min(records.count, lane * size)..<min(records.count, (lane + 1) * size)
                let (slice, sent) = (records[range], fields[range])
                group.addTask { (lane, try Self.seal(slice, fields: sent, zoneKeys, container: container)) }
            }
            var slices = [[Record]](repeating: [], count: lanes)
            for try await (lane, sealed) in group { slices[lane] = sealed }
            return slices.flatMap { $0 }
        }
    }

    /// Below this many records a lane, a batch is sealed on the calling task alone.
    static let recordsPerSealingLane = 32

    /// The cores sealing may use, read once (Foundation reads them from the system at each
    /// ask: on Linux about 150 µs, as long as a single save's sealing).
    static let cores = ProcessInfo.processInfo.activeProcessorCount

    /// The key a zone's new values are sealed with, and the zone's owner.
    struct SealingKey: Sendable {
        var key: ZoneKey
        var owner: String
    }

    /// The encrypted fields of `record` that a save under `policy` sends and that are sealed
    /// as values (assets are encrypted as files, Database+AssetEncryption, and their fields
    /// stay `ASSET`), in name order.
    static func sealableFields(of record: Record, policy: SavePolicy) -> [String] {
        let sent = record.saveOperation(policy: policy).fields
        return record.encryptedKeys.filter { sent[$0].map { $0.sdkAssets.isEmpty } ?? false }.sorted()
    }

    /// `records` with `fields` (their ``sealableFields(of:policy:)``, in the same order)
    /// sealed with their zones' keys in `zoneKeys`.
    static func seal(
        _ records: ArraySlice<Record>, fields sealable: ArraySlice<[String]>, _ zoneKeys: [ZoneID: SealingKey], container: String
    ) throws -> [Record] {
        var sealed = Array(records)
        var nonces = RandomNonces()
        for (index, fields) in zip(sealed.indices, sealable) {
            guard !fields.isEmpty, let zone = zoneKeys[sealed[index].id.zoneID] else { continue }
            let id = sealed[index].id
            let places = RecordFieldPlaces(
                container: container, zoneName: id.zoneID.zoneName, ownerRecordName: zone.owner, recordName: id.recordName)
            for field in fields {
                let plaintext = try EncryptedFieldCoding.plaintext(of: sealed[index].values[field]!, field: field)
                sealed[index].values[field] = .encryptedBytes(
                    try FieldSealing.sealedData(plaintext, with: zone.key, field: field, of: places, nonces: &nonces))
            }
        }
        return sealed
    }

    /// `record` with each `ENCRYPTED_BYTES` value opened and its field marked encrypted.
    /// - Throws: ``NimbusError/Code/decryptionFailed`` when a value does not authenticate
    ///   (nothing is decrypted); ``NimbusError/Code/encryptionKeysMissing`` when this device
    ///   lacks the key it was sealed with.
    func opened(_ record: Record) async throws(NimbusError) -> Record {
        if EncryptionKeys.isKeyDirectoryRecord(record), let keys = container.encryption {
            await keys.noteFetched(record, in: self)
        }
        try await checkAssetPlaces(of: record)
        let sealedFields = record.values.compactMap { field, value in value.encryptedBytesValue.map { (field, $0) } }
        guard !sealedFields.isEmpty else { return record }
        do {
            let keys = try encryptionKeys()
            var opened = record
            for (field, envelope) in sealedFields.sorted(by: { $0.0 < $1.0 }) {
                guard let keyID = FieldSealing.keyID(of: Array(envelope)) else {
                    throw NimbusError(
                        .decryptionFailed,
                        "the encrypted value of '\(field)' is not an envelope this version reads (update the app)",
                        recordID: record.id)
                }
                let (zoneKeys, owner) = try await keys.openingKeys(for: record.id.zoneID, keyID: keyID, in: self)
                let plaintext: [UInt8]
                do {
                    plaintext = try FieldSealing.open(
                        Array(envelope), keys: zoneKeys, for: place(of: record.id, field, owner: owner))
                } catch {
                    throw NimbusError(.decryptionFailed, error.message, recordID: record.id)
                }
                opened.values[field] = try EncryptedFieldCoding.value(from: plaintext, field: field)
                opened.encryptedKeys.insert(field)
            }
            return opened
        } catch let error as NimbusError {
            throw error.recordID == nil ? error.about(record.id) : error
        } catch {
            throw NimbusError(.decryptionFailed, "\(error)", recordID: record.id)
        }
    }

    /// A result whose record is opened (``opened(_:)``), or the failure that stops it.
    func opened(_ result: Result<Record, NimbusError>) async -> Result<Record, NimbusError> {
        guard case .success(let record) = result else { return result }
        do {
            return .success(try await opened(record))
        } catch {
            return .failure(error)
        }
    }

    /// A save's answer opened (``opened(_:)``), where a field's envelope is the very one this
    /// device sent for that field of that record: its value is the one the app set, and is
    /// not opened again (a save of many encrypted records costs one sealing per value, not a
    /// sealing and an opening).
    func opened(
        _ result: Result<Record, NimbusError>, answering original: Record, sent: Record?
    ) async -> Result<Record, NimbusError> {
        guard case .success(var record) = result, let sent, record.id == original.id else { return await opened(result) }
        // The values are taken out while they change, so that they change in place.
        var values = record.values
        record.values = [:]
        var echoed: [String] = []
        for (field, mine) in sent.values {
            guard case .encryptedBytes(let mine) = mine, case .encryptedBytes(let envelope)? = values[field],
                envelope == mine, let plain = original.values[field]
            else { continue }
            values[field] = plain
            echoed.append(field)
        }
        record.values = values
        // Where every encrypted field the app set came back as sent, the record's marks are
        // the app's own (no new set is built).
        if echoed.count == original.encryptedKeys.count, record.encryptedKeys.isEmpty,
            echoed.allSatisfy(original.encryptedKeys.contains)
        {
            record.encryptedKeys = original.encryptedKeys
        } else {
            record.encryptedKeys.formUnion(echoed)
        }
        return await opened(.success(record))
    }

    /// A conflict error with its server record opened (or the failure to open it instead).
    func opened(_ error: NimbusError) async -> NimbusError {
        guard let server = error.serverRecord else { return error }
        do {
            var copy = error
            copy.serverRecord = try await opened(server)
            return copy
        } catch let failure {
            return failure
        }
    }

    package func encryptionKeys() throws(NimbusError) -> EncryptionKeys {
        guard let keys = container.encryption else {
            throw NimbusError(
                .encryptionKeysMissing,
                "records with encrypted fields need the container's encryption keys (Container.encryption)")
        }
        return keys
    }

    private func place(of recordID: Record.ID, _ field: String, owner: String) -> FieldPlace {
        FieldPlace(
            container: container.identifier, zoneName: recordID.zoneID.zoneName, ownerRecordName: owner,
            recordName: recordID.recordName, fieldName: field)
    }
}
