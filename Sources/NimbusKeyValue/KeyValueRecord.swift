import Foundation
import NimbusProtocol
import NimbusSync

/// How a key and its value are kept: one record per key, of type ``KeyValueStore/recordType``
/// in zone ``KeyValueStore/zone`` of the user's private database, named for the key's UTF-8
/// (so any key, whatever its characters, maps to one valid record name, the same on every
/// device) with two fields: `key` (the key as given) and `value` (its tagged JSON).
enum KeyValueRecord {
    static let keyField = "key"
    static let valueField = "value"

    /// `kv_` and the key's UTF-8 in hex: at most 131 ASCII characters for a 64-byte key.
    static func recordName(for key: String) -> String {
        "kv_" + key.utf8.map { String(format: "%02x", $0) }.joined()
    }

    static func record(key: String, encoded: String) -> LocalRecord {
        LocalRecord(
            zoneName: KeyValueStore.zone, recordName: recordName(for: key), recordType: KeyValueStore.recordType,
            fields: [keyField: .string(key), valueField: .string(encoded)])
    }

    /// The key and encoded value a record holds; `nil` for a record this store did not write.
    static func entry(_ record: LocalRecord) -> (key: String, encoded: String)? {
        guard record.recordType == KeyValueStore.recordType, case .string(let key)? = record[keyField],
            case .string(let encoded)? = record[valueField], recordName(for: key) == record.recordName
        else { return nil }
        return (key, encoded)
    }

    /// The key a record name stands for (for deletions, which carry only the name).
    static func key(forRecordName name: String) -> String? {
        guard name.hasPrefix("kv_") else { return nil }
        let hex = Array(name.utf8.dropFirst(3))
        guard hex.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.count / 2)
        for index in stride(from: 0, to: hex.count, by: 2) {
            guard let byte = UInt8(String(decoding: hex[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return String(data: Data(bytes), encoding: .utf8)
    }

    /// The size a limit counts for a key: its UTF-8 and its value as it travels.
    static func size(key: String, encoded: String) -> Int { key.utf8.count + encoded.utf8.count }
}
