import Foundation

/// One document or folder of the synced tree, as the app lists it (`NSMetadataQuery`'s
/// results): also documents not downloaded yet, with their size and state.
public struct DocumentItem: Sendable, Hashable {
    /// Where it is (or would be) on this device, in local names.
    public var path: DocumentPath
    /// Its true name (the record's; the path's last name is its local form).
    public var name: String
    public var kind: DocumentRecord.Kind
    public var recordName: String
    /// Bytes (0 for a folder).
    public var size: Int64
    public var sha256: String
    public var modified: Date
    /// The device that wrote these bytes.
    public var device: String
    /// Whether its current bytes are on this device (always for a folder).
    public var isDownloaded: Bool
    /// Whether a change of this device to it has not reached the server yet.
    public var isUploading: Bool
    /// For a conflict version: the record name of the document it lost to.
    public var conflictOf: String?

    /// Its state in `NSMetadataQuery`'s terms (`NSMetadataUbiquitousItemDownloadingStatusKey`).
    public var downloadingStatus: DownloadingStatus { isDownloaded ? .current : .notDownloaded }

    public enum DownloadingStatus: String, Sendable, Hashable {
        /// The bytes on the device are the latest.
        case current
        /// Only the item's description is on the device (a placeholder).
        case notDownloaded
    }
}

/// A version of a document kept beside it when two devices changed it at once
/// (`NSFileVersion`'s unresolved conflict versions).
public struct ConflictVersion: Sendable, Hashable {
    /// The conflict version's own path (`"Plan (Conflict from iPad, …).txt"`).
    public var path: DocumentPath
    public var recordName: String
    /// The device whose edit it holds.
    public var device: String
    public var modified: Date
    public var size: Int64
}

/// How to resolve a document's conflicts (`NSFileVersion`'s `isResolved` and
/// `replaceItem(at:)`).
public enum ConflictResolution: Sendable, Hashable {
    /// Keep the document as it is; the conflict versions are deleted.
    case keepCurrent
    /// The document takes this version's bytes; the conflict versions are deleted.
    case keepVersion(ConflictVersion)
    /// Keep both: each conflict version stays as a document of its own, no longer a conflict.
    case keepBoth
}
