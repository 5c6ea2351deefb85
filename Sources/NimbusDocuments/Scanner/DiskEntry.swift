/// What the scanner reads of one item on disk: enough to tell, without reading its bytes,
/// whether it may have changed since the last scan.
public struct DiskEntry: Sendable, Hashable {
    public var isFolder: Bool
    /// The file system's file number (inode); 0 where the file system has none.
    public var inode: UInt64
    public var size: Int64
    /// Modification time in nanoseconds since 1970.
    public var modified: Int64

    public init(isFolder: Bool, inode: UInt64, size: Int64, modified: Int64) {
        self.isFolder = isFolder
        self.inode = inode
        self.size = size
        self.modified = modified
    }
}

/// An item as the last sync left it on disk: its record, where it was, what it looked like,
/// and the SHA-256 of the bytes it held (empty for a folder).
public struct KnownItem: Sendable, Hashable {
    public var recordName: String
    public var path: DocumentPath
    public var entry: DiskEntry
    public var sha256: String

    public init(recordName: String, path: DocumentPath, entry: DiskEntry, sha256: String) {
        self.recordName = recordName
        self.path = path
        self.entry = entry
        self.sha256 = sha256
    }
}
