import Foundation
import Nimbus
import NimbusProtocol

#if canImport(CoreLocation)
import CoreLocation
#endif

/// A value a record field can hold: `String`, the integer types, `Double`, `Float`, `Bool`,
/// `Date`, `Data`, `CLLocation`, ``CKAsset``, ``CKRecord/Reference``, their Foundation
/// counterparts (`NSString`, `NSNumber`, `NSDate`, `NSData`) and arrays of them.
///
/// Integers and booleans are stored as INT64 (booleans as 0 and 1, as CloudKit does) and read
/// back as `NSNumber`, so `record["count"] as? Int` and `record["done"] as? Bool` work as they
/// do in CloudKit.
public protocol CKRecordValueProtocol {}

/// CloudKit's name for the values a record's untyped subscript takes and returns.
public typealias __CKRecordObjCValue = CKRecordValueProtocol

/// A record field's value: `record["title"] = "Hello" as CKRecordValue`.
public typealias CKRecordValue = any __CKRecordObjCValue

/// How a record value becomes a field value (kept out of the public protocol, which CloudKit
/// declares without requirements).
protocol FieldValueConvertible {
    var ckFieldValue: FieldValue? { get }
}

extension String: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { .string(self) }
}

extension NSString: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { .string(self as String) }
}

extension Int: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { .int64(Int64(self)) }
}

extension Int8: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { .int64(Int64(self)) }
}

extension Int16: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { .int64(Int64(self)) }
}

extension Int32: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { .int64(Int64(self)) }
}

extension Int64: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { .int64(self) }
}

extension UInt: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { Int64(exactly: self).map(FieldValue.int64) }
}

extension UInt8: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { .int64(Int64(self)) }
}

extension UInt16: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { .int64(Int64(self)) }
}

extension UInt32: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { .int64(Int64(self)) }
}

extension UInt64: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { Int64(exactly: self).map(FieldValue.int64) }
}

extension Bool: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { .int64(self ? 1 : 0) }
}

extension Double: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { .double(self) }
}

extension Float: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { .double(Double(self)) }
}

extension NSNumber: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? {
        switch String(cString: objCType) {
        case "f", "d": return .double(doubleValue)
        default: return .int64(int64Value)
        }
    }
}

extension Date: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { FieldValue(date: self) }
}

extension NSDate: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { (self as Date).ckFieldValue }
}

extension Data: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { .bytes(self) }
}

extension NSData: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { .bytes(Data(referencing: self)) }
}

extension CLLocation: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { .location(nimbus) }
}

extension CKAsset: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { asset.fieldValue }
}

extension CKRecord.Reference: CKRecordValueProtocol, FieldValueConvertible {
    var ckFieldValue: FieldValue? { .reference(nimbus) }
}

/// Lists: `[String]` is a STRING_LIST, `[Date]` a TIMESTAMP_LIST, and so on.
extension Array: CKRecordValueProtocol where Element: CKRecordValueProtocol {}

extension Array: FieldValueConvertible where Element: CKRecordValueProtocol {
    var ckFieldValue: FieldValue? {
        var values: [FieldValue] = []
        values.reserveCapacity(count)
        for element in self {
            guard let value = (element as? any FieldValueConvertible)?.ckFieldValue else { return nil }
            values.append(value)
        }
        return .list(elementType: values.first?.type ?? .string, values)
    }
}

extension FieldValue {
    /// The field value of a record value; `nil` for a value no field can hold (an unsigned
    /// integer past `Int64.max`).
    static func from(_ value: any CKRecordValueProtocol) -> FieldValue? {
        (value as? any FieldValueConvertible)?.ckFieldValue
    }

    /// The value CloudKit returns for this field of the record `holder`: `String`,
    /// `NSNumber`, `Date`, `Data`, `CLLocation`, ``CKRecord/Reference``, ``CKAsset``, or an
    /// array of one of them.
    func recordValue(heldBy holder: Record.ID) -> any CKRecordValueProtocol {
        switch self {
        case .string(let value): return value
        case .int64(let value): return NSNumber(value: value)
        case .double(let value): return NSNumber(value: value)
        case .timestamp(let milliseconds, let fraction): return FieldValue.date(milliseconds: milliseconds, fraction: fraction)
        case .bytes(let value): return value
        // An envelope the SDK could not open never reaches a CKRecord (the fetch fails with
        // CKError); should one, it reads as its opaque bytes, never as a plain value.
        case .encryptedBytes(let value): return value
        case .location(let value): return CLLocation.from(value)
        case .reference(let value): return CKRecord.Reference(value, heldBy: holder)
        case .asset:
            let asset = Nimbus.Asset(fieldValue: self)!
            return CKAsset(asset: asset, localFile: AssetCache.file(for: asset))
        case .list(let type, let values):
            let elements = values.map { $0.recordValue(heldBy: holder) }
            switch type {
            case .string: return elements.compactMap { $0 as? String }
            case .int64, .double: return elements.compactMap { $0 as? NSNumber }
            case .timestamp: return elements.compactMap { $0 as? Date }
            case .bytes: return elements.compactMap { $0 as? Data }
            case .location: return elements.compactMap { $0 as? CLLocation }
            case .reference: return elements.compactMap { $0 as? CKRecord.Reference }
            case .asset: return elements.compactMap { $0 as? CKAsset }
            default: return elements.compactMap { $0 as? String }
            }
        }
    }
}
