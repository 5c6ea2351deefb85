import Foundation
import Nimbus
import NimbusProtocol

extension CKRecord {
    /// Writes the record's identity and system fields (type, change tag, dates, parent,
    /// share), without its fields, to `coder`: what an app keeps beside its own copy of the
    /// fields, to save an edit later with only the changed keys.
    ///
    /// ```swift
    /// let archiver = NSKeyedArchiver(requiringSecureCoding: true)
    /// record.encodeSystemFields(with: archiver)
    /// archiver.finishEncoding()
    /// store(archiver.encodedData)
    /// // Later:
    /// let unarchiver = try NSKeyedUnarchiver(forReadingFrom: data)
    /// unarchiver.requiresSecureCoding = true
    /// let record = CKRecord(coder: unarchiver)
    /// ```
    public func encodeSystemFields(with coder: NSCoder) {
        coder.encode(state.current.encodeSystemFields() as NSData, forKey: Self.systemFieldsKey)
    }

    public static var supportsSecureCoding: Bool { true }

    /// Encodes the system fields and every field (NSCoding of a whole record).
    public func encode(with coder: NSCoder) {
        encodeSystemFields(with: coder)
        let record = state.current
        var fields: [String: JSON] = [:]
        for key in record.allKeys {
            if let value = record.fieldValue(forKey: key) { fields[key] = value.wireJSON() }
        }
        coder.encode(Data(JSON.object(fields).serializedBytes()) as NSData, forKey: Self.fieldsKey)
    }

    static let systemFieldsKey = "NimbusSystemFields"
    static let fieldsKey = "NimbusFields"
}
