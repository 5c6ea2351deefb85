import Foundation
import NimbusProtocol

extension Record {
    /// The record's encrypted fields (CloudKit's `CKRecord.encryptedValues`): set and read as
    /// the record's own subscript does, but sealed on this device with the zone's key before
    /// they leave it, and opened after they arrive (docs/ENCRYPTION.md). The server stores and
    /// returns them as `ENCRYPTED_BYTES` and cannot read, query or sort them.
    ///
    /// ```swift
    /// var photo = Record(recordType: "Photo", recordID: Record.ID(zoneID: album))
    /// photo.encryptedValues["caption"] = "Beach, 2024"
    /// try await database.save(photo)          // needs `container.encryption`
    /// let caption: String? = fetched.encryptedValues["caption"]
    /// ```
    ///
    /// Any value but a ``Reference`` can be encrypted (references stay readable, as in
    /// CloudKit, for cascading deletes and shares); a field, once encrypted, stays so: its
    /// schema type is `ENCRYPTED_BYTES`. Encrypted fields exist in private and shared zones only.
    /// An ``Asset`` needs no marking: as in CloudKit, every asset this device saves to the
    /// private database with ``Container/encryption`` set is encrypted as a file (an asset set
    /// here is the same asset, its field stays `ASSET`; read it on the record).
    public var encryptedValues: EncryptedValues {
        get { EncryptedValues(record: self) }
        // The view holds the record's only copy while it is changed (no copy on write of its
        // fields per value set).
        _modify {
            var view = EncryptedValues(record: self)
            values = [:]
            originalValues = [:]
            encryptedKeys = []
            defer { self = view.record }
            yield &view
        }
    }

    /// A view of a record's encrypted fields: ``Record/encryptedValues``.
    public struct EncryptedValues: Sendable {
        var record: Record

        /// An encrypted field's value, converted to `Value`; `nil` when absent, of another
        /// type, or not an encrypted field. Setting `nil` removes the field.
        public subscript<Value: RecordValue>(key: String) -> Value? {
            get { fieldValue(forKey: key).flatMap(Value.init(fieldValue:)) }
            set { setFieldValue(newValue?.fieldValue, forKey: key) }
        }

        /// An encrypted field's raw (opened) value.
        public func fieldValue(forKey key: String) -> FieldValue? {
            record.encryptedKeys.contains(key) ? record.values[key] : nil
        }

        /// Sets or removes an encrypted field, tracking the change.
        public mutating func setFieldValue(_ value: FieldValue?, forKey key: String) {
            record.encryptedKeys.insert(key)
            record.setFieldValue(value, forKey: key)
        }

        /// The encrypted fields that have a value.
        public var allKeys: [String] { record.encryptedKeys.filter { record.values[$0] != nil }.sorted() }
    }
}

/// How a field value travels inside an envelope: its wire JSON `{"type":…,"value":…}`, so
/// that any type but a reference can be encrypted and a third-party client can read it
/// (docs/ENCRYPTION.md, "Field envelope").
enum EncryptedFieldCoding {
    /// The plaintext an envelope seals for `value`.
    static func plaintext(of value: FieldValue, field: String) throws(NimbusError) -> [UInt8] {
        switch value {
        case .reference, .list(.reference, _):
            throw NimbusError(
                .invalidArguments,
                "field '\(field)' holds a reference, which is never encrypted (the server needs it for deletes and "
                    + "shares); set it on the record, not in encryptedValues")
        case .asset, .list(.asset, _):
            throw NimbusError(
                .invalidArguments,
                "field '\(field)' holds an asset: assets are encrypted as files (each with its own key, in the private "
                    + "database with Container.encryption set), never as field values")
        case .encryptedBytes:
            throw NimbusError(.invalidArguments, "field '\(field)' holds an envelope already; set the plain value")
        default:
            var bytes: [UInt8] = []
            value.writeWire(into: &bytes)
            return bytes
        }
    }

    /// The value an opened envelope holds.
    static func value(from plaintext: [UInt8], field: String) throws(NimbusError) -> FieldValue {
        do {
            let value = try FieldValue(wire: WireReader(try JSON.parse(plaintext)))
            if case .encryptedBytes = value { throw CloudKitError.badRequest("an envelope inside an envelope") }
            return value
        } catch {
            throw NimbusError(
                .decryptionFailed, "the encrypted value of '\(field)' opened but holds no field value (\(error))")
        }
    }
}
