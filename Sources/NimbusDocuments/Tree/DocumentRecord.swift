import Foundation
import Nimbus
import NimbusProtocol
import NimbusSync

/// A document or folder as a record of zone ``DocumentsFolder/zone`` (docs/DOCUMENTS.md gives
/// the format for other clients).
///
/// | field | type | on | holds |
/// |---|---|---|---|
/// | `name` | STRING | both | the true name, as the user gave it (any characters; see the name rules) |
/// | `folder` | REFERENCE | both | the folder record it is in; absent for the root |
/// | `content` | ASSET | files | the bytes |
/// | `size` | INT64 | files | the bytes' length |
/// | `sha256` | STRING | files | the bytes' SHA-256, lowercase hex |
/// | `modified` | TIMESTAMP | files | when the bytes were last changed (milliseconds) |
/// | `device` | STRING | files | the device that wrote these bytes |
/// | `conflictOf` | STRING | files | for an unresolved conflict version: the record name of the document it lost to |
public struct DocumentRecord: Sendable, Hashable {
    /// A document (`DocumentFile`) or a folder (`DocumentFolder`).
    public enum Kind: String, Sendable, Hashable {
        case file = "DocumentFile"
        case folder = "DocumentFolder"
    }

    public var recordName: String
    public var kind: Kind
    public var name: String
    /// The record name of the folder it is in; `nil` for the root.
    public var folder: String?
    public var size: Int64
    /// Lowercase hex SHA-256 of the bytes; empty for a folder.
    public var sha256: String
    public var modified: Date
    public var device: String
    /// For a conflict version: the document it lost to.
    public var conflictOf: String?
    /// The bytes: a local file waiting for upload, or the server's asset.
    public var content: Nimbus.Asset?

    static let nameField = "name", folderField = "folder", contentField = "content", sizeField = "size"
    static let shaField = "sha256", modifiedField = "modified", deviceField = "device", conflictField = "conflictOf"

    public init(
        recordName: String, kind: Kind, name: String, folder: String?, size: Int64 = 0, sha256: String = "",
        modified: Date = Date(timeIntervalSince1970: 0), device: String = "", conflictOf: String? = nil,
        content: Nimbus.Asset? = nil
    ) {
        self.recordName = recordName
        self.kind = kind
        self.name = name
        self.folder = folder
        self.size = size
        self.sha256 = sha256
        self.modified = modified
        self.device = device
        self.conflictOf = conflictOf
        self.content = content
    }

    /// The document a record holds; `nil` for a record of another type or without a name.
    public init?(_ record: LocalRecord) {
        guard let kind = Kind(rawValue: record.recordType), case .string(let name)? = record[Self.nameField] else {
            return nil
        }
        var folder: String?
        if case .reference(let reference)? = record[Self.folderField] { folder = reference.recordName }
        self.init(
            recordName: record.recordName, kind: kind, name: name, folder: folder,
            size: record[Self.sizeField]?.int64Value ?? 0,
            sha256: record[Self.shaField]?.stringValue ?? "",
            modified: Date(timeIntervalSince1970: Double(record[Self.modifiedField]?.timestampValue ?? 0) / 1000),
            device: record[Self.deviceField]?.stringValue ?? "",
            conflictOf: record[Self.conflictField]?.stringValue,
            content: record[Self.contentField].flatMap(Nimbus.Asset.init(fieldValue:)))
    }

    /// The record to save. Fields of `base` this type does not know are kept.
    func localRecord(zone: String, base: LocalRecord? = nil) -> LocalRecord {
        var fields = base?.fields ?? [:]
        fields[Self.nameField] = .string(name)
        fields[Self.folderField] = folder.map { FieldValue.reference(Reference(recordName: $0)) }
        if kind == .file {
            fields[Self.sizeField] = .int64(size)
            fields[Self.shaField] = .string(sha256)
            fields[Self.modifiedField] = .timestamp(Int64((modified.timeIntervalSince1970 * 1000).rounded()))
            fields[Self.deviceField] = .string(device)
            fields[Self.conflictField] = conflictOf.map { FieldValue.string($0) }
            if let content { fields[Self.contentField] = content.fieldValue }
        }
        return LocalRecord(zoneName: zone, recordName: recordName, recordType: kind.rawValue, fields: fields)
    }
}
