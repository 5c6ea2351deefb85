import Foundation
import Nimbus
import NimbusProtocol

/// Reading and writing a record's fields by key: what ``CKRecord`` and its
/// ``CKRecord/encryptedValues`` share.
public protocol CKRecordKeyValueSetting: NSObjectProtocol {
    subscript(key: String) -> (any CKRecordValueProtocol)? { get set }
    subscript<T: CKRecordValueProtocol>(key: String) -> T? { get set }
    func object(forKey key: String) -> (any CKRecordValueProtocol)?
    func setObject(_ object: (any CKRecordValueProtocol)?, forKey key: String)
    func allKeys() -> [String]
    func changedKeys() -> [String]
}

/// A record's ``CKRecord/encryptedValues``: the SDK record's ``Nimbus/Record/encryptedValues``,
/// sealed on the device before a save and opened after a fetch (docs/ENCRYPTION.md).
final class CKRecordEncryptedValues: NSObject, CKRecordKeyValueSetting, Sendable {
    let record: CKRecord

    init(record: CKRecord) {
        self.record = record
    }

    subscript(key: String) -> (any CKRecordValueProtocol)? {
        get { object(forKey: key) }
        set { setObject(newValue, forKey: key) }
    }

    subscript<T: CKRecordValueProtocol>(key: String) -> T? {
        get { object(forKey: key) as? T }
        set { setObject(newValue, forKey: key) }
    }

    func object(forKey key: String) -> (any CKRecordValueProtocol)? {
        record.state.withLock { nimbus in
            nimbus.encryptedValues.fieldValue(forKey: key).map { $0.recordValue(heldBy: nimbus.id) }
        }
    }

    /// Sets or removes an encrypted field. A reference (never encrypted, as in CloudKit) or a
    /// value no field can hold stops the program, as CloudKit raises an exception.
    func setObject(_ object: (any CKRecordValueProtocol)?, forKey key: String) {
        let value = object.map { value -> FieldValue in
            guard let field = FieldValue.from(value) else {
                preconditionFailure("CKRecord: \(type(of: value)) is not a value a record field can hold")
            }
            precondition(field.references.isEmpty, "CKRecord: references cannot be encrypted (key '\(key)')")
            return field
        }
        record.state.withLock { $0.encryptedValues.setFieldValue(value, forKey: key) }
    }

    func allKeys() -> [String] { record.state.current.encryptedValues.allKeys }
    func changedKeys() -> [String] {
        let nimbus = record.state.current
        return nimbus.changedKeys.filter { nimbus.encryptedKeys.contains($0) }
    }
}
