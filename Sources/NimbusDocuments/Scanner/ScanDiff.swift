/// The scanner's decision, free of I/O: what happened to each known item since the last sync,
/// and what is new, from the disk as it is now. Bytes are hashed (by the `hash` the caller
/// passes) only for files whose size, time or inode changed, and for new files that may be
/// a known file moved.
///
/// A known item is found again at its old path (same kind, and not another known item's
/// inode), else by its inode anywhere (a move or rename, also of a whole folder: each item in
/// it is found by its inode), else, for a file, by size and content hash among the new files
/// (a move on a file system without stable inodes, or a copy-then-delete). What is left of
/// the known items is gone; what is left on disk is new.
public enum ScanDiff {
    /// What became of a known item.
    public enum Outcome: Sendable, Hashable {
        /// It is at `path` (moved if that is not where it was) with these bytes.
        case present(path: DocumentPath, entry: DiskEntry, sha256: String)
        /// It was deleted (or moved out of the folder).
        case gone
        /// It changed while being read: decided at the next scan.
        case unsettled
    }

    public struct Result: Sendable {
        public var outcomes: [String: Outcome] = [:]
        /// New items, folders before what they hold; `sha256` is empty for a folder.
        public var created: [(path: DocumentPath, entry: DiskEntry, sha256: String)] = []
        /// New files that changed while being read: picked up at the next scan.
        public var unsettled: [DocumentPath] = []
    }

    /// - Parameters:
    ///   - known: the items as the last sync left them.
    ///   - disk: every item in the folder now (no symbolic links).
    ///   - hash: the SHA-256 of a file's bytes, or `nil` if it changed while being read.
    public static func diff(
        known: [KnownItem], disk: [DocumentPath: DiskEntry], hash: (DocumentPath) -> String?
    ) -> Result {
        var result = Result()
        var claimed = Set<DocumentPath>()
        let knownInodes = Dictionary(
            known.filter { $0.entry.inode != 0 }.map { ($0.entry.inode, $0.recordName) }, uniquingKeysWith: { a, _ in a })
        let diskByInode = Dictionary(
            disk.filter { $0.value.inode != 0 }.map { ($0.value.inode, $0.key) }, uniquingKeysWith: { a, _ in a })
        var missing: [KnownItem] = []
        // 1. At the same path.
        for item in known.sorted(by: { $0.path < $1.path }) {
            guard let entry = disk[item.path], entry.isFolder == item.entry.isFolder,
                isSameItem(item, entry, knownInodes: knownInodes, diskByInode: diskByInode)
            else {
                missing.append(item)
                continue
            }
            claimed.insert(item.path)
            result.outcomes[item.recordName] = outcome(of: item, at: item.path, entry: entry, hash: hash)
        }
        // 2. By inode elsewhere.
        var stillMissing: [KnownItem] = []
        for item in missing {
            if item.entry.inode != 0, let path = diskByInode[item.entry.inode], !claimed.contains(path),
                let entry = disk[path], entry.isFolder == item.entry.isFolder
            {
                claimed.insert(path)
                result.outcomes[item.recordName] = outcome(of: item, at: path, entry: entry, hash: hash)
            } else {
                stillMissing.append(item)
            }
        }
        // 3. Files by size and content among the new files.
        var newFiles: [DocumentPath: String] = [:]
        var unsettled = Set<DocumentPath>()
        func contentHash(_ path: DocumentPath) -> String? {
            if let known = newFiles[path] { return known }
            guard !unsettled.contains(path) else { return nil }
            guard let sha = hash(path) else {
                unsettled.insert(path)
                return nil
            }
            newFiles[path] = sha
            return sha
        }
        for item in stillMissing {
            guard !item.entry.isFolder else {
                result.outcomes[item.recordName] = .gone
                continue
            }
            let match = disk.keys.sorted().first { path in
                guard !claimed.contains(path), let entry = disk[path], !entry.isFolder, entry.size == item.entry.size
                else { return false }
                return contentHash(path) == item.sha256
            }
            if let match, let entry = disk[match] {
                claimed.insert(match)
                result.outcomes[item.recordName] = .present(path: match, entry: entry, sha256: item.sha256)
            } else {
                result.outcomes[item.recordName] = .gone
            }
        }
        // 4. The rest is new.
        for path in disk.keys.sorted() where !claimed.contains(path) {
            let entry = disk[path]!
            if entry.isFolder {
                result.created.append((path, entry, ""))
            } else if let sha = contentHash(path) {
                result.created.append((path, entry, sha))
            } else {
                result.unsettled.append(path)
            }
        }
        return result
    }

    /// Whether `entry`, at `item`'s path, is `item`: the same inode; or, for a file, a new
    /// inode that no other known item has while `item`'s own is nowhere on disk (an editor
    /// that saves by writing a new file and renaming it over the old one).
    static func isSameItem(
        _ item: KnownItem, _ entry: DiskEntry, knownInodes: [UInt64: String], diskByInode: [UInt64: DocumentPath]
    ) -> Bool {
        if entry.inode == item.entry.inode || entry.inode == 0 || item.entry.inode == 0 { return true }
        if item.entry.isFolder { return false }
        return knownInodes[entry.inode] == nil && diskByInode[item.entry.inode] == nil
    }

    /// A known item found at `path`: its bytes re-hashed only if its size, time or inode changed.
    static func outcome(of item: KnownItem, at path: DocumentPath, entry: DiskEntry, hash: (DocumentPath) -> String?) -> Outcome {
        if entry.isFolder || (entry.size == item.entry.size && entry.modified == item.entry.modified && entry.inode == item.entry.inode) {
            return .present(path: path, entry: entry, sha256: item.sha256)
        }
        guard let sha = hash(path) else { return .unsettled }
        return .present(path: path, entry: entry, sha256: sha)
    }
}
