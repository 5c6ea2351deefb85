import Foundation
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

/// A record's ``CKRecord/encryptedValues``: for now the record's own fields (see the note there).
final class CKRecordEncryptedValues: NSObject, CKRecordKeyValueSetting, Sendable {
    let record: CKRecord

    init(record: CKRecord) {
        self.record = record
    }

    subscript(key: String) -> (any CKRecordValueProtocol)? {
        get { record.object(forKey: key) }
        set { record.setObject(newValue, forKey: key) }
    }

    subscript<T: CKRecordValueProtocol>(key: String) -> T? {
        get { record.object(forKey: key) as? T }
        set { record.setObject(newValue, forKey: key) }
    }

    func object(forKey key: String) -> (any CKRecordValueProtocol)? { record.object(forKey: key) }
    func setObject(_ object: (any CKRecordValueProtocol)?, forKey key: String) { record.setObject(object, forKey: key) }
    func allKeys() -> [String] { record.allKeys() }
    func changedKeys() -> [String] { record.changedKeys() }
}
