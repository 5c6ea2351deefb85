import Foundation

/// The value of one record field, typed as CloudKit types it.
public indirect enum FieldValue: Sendable, Hashable {
    case string(String)
    case int64(Int64)
    case double(Double)
    /// A point in time: whole milliseconds since the epoch (1970-01-01T00:00:00Z), the
    /// nearest to the time (half a millisecond rounds up), and `fraction`, the part of a
    /// millisecond they leave out, in units of 2^-54 ms (``timestampFractionsPerMillisecond``),
    /// within [-2^53, 2^53). CloudKit Web Services carries whole milliseconds; the fraction
    /// travels beside them (`millisecondFraction`, docs/COMPATIBILITY.md) so that a `Date`
    /// round-trips exactly (``init(date:)``, ``dateValue``). Build one from parts that may
    /// be out of that range with ``timestamp(milliseconds:fraction:)``.
    case timestamp(Int64, fraction: Int64 = 0)
    case bytes(Data)
    case location(Location)
    case reference(Reference)
    /// An ASSET value (sent as `ASSETID` on input, returned as `ASSET`).
    case asset(Asset)
    /// A `*_LIST` value. `elementType` names the element type so empty lists keep their type.
    case list(elementType: FieldType, [FieldValue])
    /// An `ENCRYPTED_BYTES` value: a sealed envelope, opaque to the server (only devices that
    /// hold the zone key open it; see docs/ENCRYPTION.md).
    case encryptedBytes(Data)

    /// The wire type name of this value.
    public var type: FieldType {
        switch self {
        case .string: return .string
        case .int64: return .int64
        case .double: return .double
        case .timestamp: return .timestamp
        case .bytes: return .bytes
        case .location: return .location
        case .reference: return .reference
        case .asset: return .asset
        case .list(let elementType, _): return elementType.listType ?? .stringList
        case .encryptedBytes: return .encryptedBytes
        }
    }

    /// Every reference in this value (one for REFERENCE, each element for REFERENCE_LIST).
    public var references: [Reference] {
        switch self {
        case .reference(let reference): return [reference]
        case .list(_, let values): return values.flatMap(\.references)
        default: return []
        }
    }

    /// Every asset in this value (one for ASSET, each element for ASSET_LIST).
    public var assets: [Asset] {
        switch self {
        case .asset(let asset): return [asset]
        case .list(_, let values): return values.flatMap(\.assets)
        default: return []
        }
    }
}

extension FieldValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int64(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension FieldValue {
    public var stringValue: String? { if case .string(let v) = self { return v } else { return nil } }
    public var int64Value: Int64? { if case .int64(let v) = self { return v } else { return nil } }
    public var doubleValue: Double? {
        switch self {
        case .double(let v): return v
        case .int64(let v): return Double(v)
        default: return nil
        }
    }
    /// The whole milliseconds of a TIMESTAMP value (without its fraction: ``dateValue`` has
    /// the exact time), or `nil`.
    public var timestampValue: Int64? { if case .timestamp(let v, _) = self { return v } else { return nil } }
    public var bytesValue: Data? { if case .bytes(let v) = self { return v } else { return nil } }
    public var locationValue: Location? { if case .location(let v) = self { return v } else { return nil } }
    public var referenceValue: Reference? { if case .reference(let v) = self { return v } else { return nil } }
    /// The asset of an ASSET value, or `nil`.
    public var assetValue: Asset? { if case .asset(let v) = self { return v } else { return nil } }
    public var listValue: [FieldValue]? { if case .list(_, let v) = self { return v } else { return nil } }
    /// The envelope of an `ENCRYPTED_BYTES` value, or `nil`.
    public var encryptedBytesValue: Data? { if case .encryptedBytes(let v) = self { return v } else { return nil } }
}
