import Foundation

/// Reads the synced folder: every file and folder in it, never following a symbolic link (a
/// link is neither read nor synced, so one pointing out of the folder leads nowhere).
public struct FolderReader: Sendable {
    /// The synced folder.
    public let root: URL

    /// Names the scanner never syncs: the Finder's and Explorer's own files, and downloads not
    /// yet moved into place (``downloadPrefix``).
    public static let ignoredNames: Set<String> = [".DS_Store", "Thumbs.db", "desktop.ini", ".localized"]
    /// The prefix of the library's temporary names in the folder: items moved aside during
    /// renames (scanned like any item, so an interrupted rename loses nothing) and downloads.
    public static let temporaryPrefix = ".nimbus-"
    /// The prefix of a download not yet moved into place: never scanned.
    public static let downloadPrefix = temporaryPrefix + "download-"

    public init(root: URL) {
        self.root = root.standardizedFileURL
    }

    /// Whether the scanner skips a name.
    public static func isIgnored(_ name: String) -> Bool {
        ignoredNames.contains(name) || name.hasPrefix(downloadPrefix)
    }

    /// Every item below the root; symbolic links, ignored names and items that cannot be read
    /// are left out.
    public func snapshot() -> [DocumentPath: DiskEntry] {
        var result: [DocumentPath: DiskEntry] = [:]
        var pending: [DocumentPath] = [.root]
        while let folder = pending.popLast() {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: url(of: folder).path) else { continue }
            for name in names where !Self.isIgnored(name) {
                guard let path = try? folder.appending(name), let entry = entry(at: path) else { continue }
                result[path] = entry
                if entry.isFolder { pending.append(path) }
            }
        }
        return result
    }

    /// The entry at `path`; `nil` if nothing, a symbolic link or something other than a
    /// file or folder is there.
    public func entry(at path: DocumentPath) -> DiskEntry? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: url(of: path).path),
            let type = attributes[.type] as? FileAttributeType,
            type == .typeDirectory || type == .typeRegular
        else { return nil }
        let inode = (attributes[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0
        let size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        let modified = (attributes[.modificationDate] as? Date).map { Int64(($0.timeIntervalSince1970 * 1e9).rounded()) } ?? 0
        return DiskEntry(isFolder: type == .typeDirectory, inode: inode, size: type == .typeDirectory ? 0 : size, modified: modified)
    }

    /// The file URL of `path`. Its components are names (``DocumentPath`` refuses `..`, `.`,
    /// `/`), so the URL is inside the folder.
    public func url(of path: DocumentPath) -> URL {
        path.components.reduce(root) { $0.appendingPathComponent($1, isDirectory: false) }
    }

    /// Whether every folder on the way to `path` is a real folder inside the root (no
    /// symbolic link on the way): where the library may write.
    ///
    /// - Throws: ``DocumentsError/pathEscapesFolder(_:)`` when a link is on the way.
    public func checkWritable(_ path: DocumentPath) throws {
        var current = DocumentPath.root
        for name in path.components.dropLast() {
            current = DocumentPath(checked: current.components + [name])
            let attributes = try? FileManager.default.attributesOfItem(atPath: url(of: current).path)
            if let type = attributes?[.type] as? FileAttributeType, type != .typeDirectory {
                throw DocumentsError.pathEscapesFolder(path.description)
            }
        }
        if let type = (try? FileManager.default.attributesOfItem(atPath: url(of: path).path))?[.type] as? FileAttributeType,
            type == .typeSymbolicLink
        {
            throw DocumentsError.pathEscapesFolder(path.description)
        }
    }
}
