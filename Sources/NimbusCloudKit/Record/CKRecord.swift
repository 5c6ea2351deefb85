import Foundation
import Nimbus
import NimbusProtocol

/// A record: a typed dictionary of fields with an identity, a type and the system fields the
/// server maintains. CloudKit's `CKRecord`, as a class.
///
/// ```swift
/// let note = CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "n1", zoneID: notesZone))
/// note["title"] = "Groceries"
/// note["due"] = Date()
/// note["tags"] = ["home", "weekly"]
/// let title = note["title"] as? String
/// ```
///
/// `@unchecked Sendable` (CloudKit's records cross threads too): every mutable part of a
/// record is one SDK `Record` value inside a `Locked`, read and written only under its lock,
/// so concurrent reads and writes are serialized; the other stored properties are constants.
open class CKRecord: NSObject, NSSecureCoding, NSCopying, CKRecordKeyValueSetting, @unchecked Sendable {
    /// A record type's name (`"Note"`).
    public typealias RecordType = String
    /// A field's name.
    public typealias FieldKey = String

    /// The types CloudKit itself defines.
    public enum SystemType {
        /// The type of user records (`users/current`).
        public static let userRecord: RecordType = "Users"
        /// The type of share records (``CKShare``).
        public static let share: RecordType = "cloudkit.share"
    }

    /// The record, fields and system fields, behind a lock.
    let state: Locked<Record>

    /// A new record in the default zone, with a new UUID name.
    public convenience init(recordType: RecordType) {
        self.init(recordType: recordType, recordID: ID())
    }

    /// A new record with the given ID.
    public init(recordType: RecordType, recordID: ID) {
        self.state = Locked(Record(recordType: recordType, recordID: recordID.nimbus))
    }

    /// A new record in a zone, with a new UUID name.
    public convenience init(recordType: RecordType, zoneID: CKRecordZone.ID) {
        self.init(recordType: recordType, recordID: ID(zoneID: zoneID))
    }

    /// The CloudKit record for an SDK record.
    init(record: Record) {
        self.state = Locked(record)
    }

    /// A record from ``encodeSystemFields(with:)`` (identity and system fields, no fields) or
    /// from ``encode(with:)`` (with its fields); `nil` when the coder holds neither.
    public required init?(coder: NSCoder) {
        // Off Apple platforms, decoding a key the archive lacks raises: ask first.
        guard coder.containsValue(forKey: Self.systemFieldsKey),
            let data = coder.decodeObject(of: NSData.self, forKey: Self.systemFieldsKey),
            var record = try? Record(systemFieldsData: Data(referencing: data))
        else { return nil }
        if coder.containsValue(forKey: Self.fieldsKey),
            let fieldsData = coder.decodeObject(of: NSData.self, forKey: Self.fieldsKey),
            let json = try? JSON.parse(Array(Data(referencing: fieldsData))), let fields = json.object
        {
            for (key, value) in fields {
                guard let field = try? FieldValue(wire: WireReader(value)) else { return nil }
                record.setFieldValue(field, forKey: key)
            }
            record.clearChangedKeys()
        }
        self.state = Locked(record)
    }

    /// The SDK record (a copy, with its change tracking).
    var nimbus: Record { state.current }

    // MARK: - System fields

    public var recordType: RecordType { state.current.recordType }
    public var recordID: ID { ID(state.current.id) }
    /// The server's version tag; `nil` before the first save.
    public var recordChangeTag: String? { state.current.recordChangeTag }
    public var creationDate: Date? { state.current.creationDate }
    public var modificationDate: Date? { state.current.modificationDate }
    /// The user who created the record.
    public var creatorUserRecordID: ID? {
        state.current.creatorUserRecordName.map { ID(recordName: $0) }
    }
    /// The user who changed the record last.
    public var lastModifiedUserRecordID: ID? {
        state.current.lastModifiedUserRecordName.map { ID(recordName: $0) }
    }

    // MARK: - Hierarchy and sharing

    /// The record this one belongs under, for sharing a hierarchy: a record of the same zone.
    public var parent: Reference? {
        get {
            state.withLock { record in record.parent.map { Reference($0, heldBy: record.id) } }
        }
        set {
            state.withLock { $0.parent = newValue?.nimbus }
        }
    }

    /// Sets ``parent`` to a reference to `parentRecord` (action `.none`).
    public func setParent(_ parentRecord: CKRecord?) {
        setParent(parentRecord?.recordID)
    }

    /// Sets ``parent`` to a reference to the record `parentRecordID` (action `.none`).
    public func setParent(_ parentRecordID: ID?) {
        parent = parentRecordID.map { Reference(recordID: $0, action: .none) }
    }

    /// The share this record is the root of, as the server last reported it.
    public var share: Reference? {
        state.withLock { record in record.share.map { Reference($0, heldBy: record.id) } }
    }

    // MARK: - Fields

    /// A field's value; `nil` when the record has no such field. Setting `nil` removes it.
    public subscript(key: FieldKey) -> CKRecordValue? {
        get { object(forKey: key) }
        set { setObject(newValue, forKey: key) }
    }

    /// A field's value as `T`; `nil` when absent or of another type.
    public subscript<T: CKRecordValueProtocol>(key: FieldKey) -> T? {
        get { object(forKey: key) as? T }
        set { setObject(newValue, forKey: key) }
    }

    public func object(forKey key: FieldKey) -> CKRecordValue? {
        state.withLock { record in record.fieldValue(forKey: key).map { $0.recordValue(heldBy: record.id) } }
    }

    /// Sets or (with `nil`) removes a field. A value no field can hold (an unsigned integer
    /// past `Int64.max`) stops the program, as an invalid value does in CloudKit.
    public func setObject(_ object: CKRecordValue?, forKey key: FieldKey) {
        let value = object.map { value -> FieldValue in
            guard let field = FieldValue.from(value) else {
                preconditionFailure("CKRecord: \(type(of: value)) is not a value a record field can hold")
            }
            return field
        }
        state.withLock { $0.setFieldValue(value, forKey: key) }
    }

    /// The keys that have a value.
    public func allKeys() -> [FieldKey] { state.current.allKeys }

    /// The keys changed since the record was fetched or last saved.
    public func changedKeys() -> [FieldKey] { state.current.changedKeys }

    /// The words of the record's string fields, lowercased (what `self CONTAINS` matches).
    public func allTokens() -> [String] {
        let record = state.current
        var tokens: [String] = []
        for key in record.allKeys {
            guard case .string(let text)? = record.fieldValue(forKey: key) else { continue }
            for word in text.lowercased().split(whereSeparator: { !$0.isLetter && !$0.isNumber }) {
                tokens.append(String(word))
            }
        }
        return tokens
    }

    /// The fields encrypted end to end: sealed on this device with the zone's key before a
    /// save, opened after a fetch; the server holds only ciphertext (docs/ENCRYPTION.md). The
    /// connection needs the user's keys (``NimbusConnection/encryption``); without them a save
    /// or fetch of encrypted fields fails with `CKError` and nothing is sent in clear.
    public var encryptedValues: any CKRecordKeyValueSetting { CKRecordEncryptedValues(record: self) }

    // MARK: - Copying and equality

    public func copy(with zone: NSZone? = nil) -> Any {
        CKRecord.make(state.current)
    }

    open override var description: String {
        let record = state.current
        return "<CKRecord: \(record.recordType) \(record.id.recordName); zone=\(record.id.zoneID.zoneName); "
            + "changeTag=\(record.recordChangeTag ?? "-"); keys=\(record.allKeys)>"
    }
}
