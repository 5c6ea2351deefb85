/// The type names CloudKit Web Services puts beside every field value.
public enum FieldType: String, Sendable, Hashable, CaseIterable, Codable {
    case string = "STRING"
    case int64 = "INT64"
    case double = "DOUBLE"
    case timestamp = "TIMESTAMP"
    case bytes = "BYTES"
    case location = "LOCATION"
    case reference = "REFERENCE"
    /// A file stored beside the record (see ``Asset``); `ASSETID` on input means the same.
    case asset = "ASSET"
    case stringList = "STRING_LIST"
    case int64List = "INT64_LIST"
    case doubleList = "DOUBLE_LIST"
    case timestampList = "TIMESTAMP_LIST"
    case bytesList = "BYTES_LIST"
    case locationList = "LOCATION_LIST"
    case referenceList = "REFERENCE_LIST"
    case assetList = "ASSET_LIST"
    /// An end-to-end encrypted value (Nimbus's extension of CloudKit Web Services, named as
    /// CloudKit's schema tools name encrypted fields): base64 of a sealed envelope the server
    /// stores and returns without reading, indexing, querying or sorting it. The envelope holds
    /// any value but a reference, lists included (docs/ENCRYPTION.md, "Wire format").
    case encryptedBytes = "ENCRYPTED_BYTES"

    /// The element type of a `*_LIST` type, or `nil` for a scalar type.
    public var elementType: FieldType? {
        switch self {
        case .stringList: return .string
        case .int64List: return .int64
        case .doubleList: return .double
        case .timestampList: return .timestamp
        case .bytesList: return .bytes
        case .locationList: return .location
        case .referenceList: return .reference
        case .assetList: return .asset
        default: return nil
        }
    }

    /// The `*_LIST` type whose elements are of this scalar type.
    public var listType: FieldType? {
        switch self {
        case .string: return .stringList
        case .int64: return .int64List
        case .double: return .doubleList
        case .timestamp: return .timestampList
        case .bytes: return .bytesList
        case .location: return .locationList
        case .reference: return .referenceList
        case .asset: return .assetList
        default: return nil
        }
    }

    public var isList: Bool { elementType != nil }

    /// The type a field dictionary's `type` names: a ``FieldType`` raw value, or `ASSETID`
    /// (`ASSETID_LIST`), the name CloudKit clients give an asset they are saving.
    public init?(wireName: String) {
        switch wireName {
        case "ASSETID": self = .asset
        case "ASSETID_LIST": self = .assetList
        default: self.init(rawValue: wireName)
        }
    }
}
