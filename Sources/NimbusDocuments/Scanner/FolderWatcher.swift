import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc

/// Watches the synced folder and every folder in it with inotify, and calls `changed` when
/// anything in them changes (a file written, created, deleted, moved or renamed, a folder
/// made or removed). It says only *that* something changed: the scan finds what.
///
/// Folders created later are watched as they appear. Symbolic links are not followed (a link
/// to a folder outside is not watched, as the scanner does not read it). When the kernel's
/// queue overflows, `changed` is called as for any event: the scan then reads everything.
///
/// `@unchecked Sendable`: its stored properties are constants (the descriptor, the dispatch
/// source and its serial queue, the reader); the watch table is touched only from `queue`,
/// inside the source's handlers and the `queue.sync` of `init`.
final class FolderWatcher: @unchecked Sendable {
    private let descriptor: Int32
    private let queue = DispatchQueue(label: "nimbus.documents.folder-watcher")
    private let source: any DispatchSourceRead
    private let reader: FolderReader

    private static let mask: UInt32 =
        UInt32(IN_CREATE) | UInt32(IN_DELETE) | UInt32(IN_MODIFY) | UInt32(IN_CLOSE_WRITE) | UInt32(IN_ATTRIB)
        | UInt32(IN_MOVED_FROM) | UInt32(IN_MOVED_TO) | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF)
        | UInt32(IN_ONLYDIR) | UInt32(IN_DONT_FOLLOW)

    /// Starts watching `reader`'s folder; `nil` when inotify is unavailable (then poll).
    init?(reader: FolderReader, changed: @escaping @Sendable () -> Void) {
        let descriptor = inotify_init1(Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC))
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
        self.reader = reader
        source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        source.setCancelHandler { close(descriptor) }
        source.setEventHandler { [weak self] in
            guard let self else { return }
            let (any, folders) = self.drain()
            if folders { self.watchFolders() }
            if any { changed() }
        }
        queue.sync { watchFolders() }
        source.resume()
    }

    /// Stops watching (the descriptor is closed).
    func stop() {
        source.cancel()
    }

    deinit {
        source.cancel()
    }

    /// Watches the root and every folder below it. Adding a watch a folder already has
    /// changes nothing, so this runs again whenever a folder may have appeared or moved.
    private func watchFolders() {
        var folders = [reader.root.path]
        for (path, entry) in reader.snapshot() where entry.isFolder { folders.append(reader.url(of: path).path) }
        for folder in folders { _ = inotify_add_watch(descriptor, folder, Self.mask) }
    }

    /// Reads every queued event. Returns whether there was any, and whether a folder may have
    /// appeared or moved (or events were lost), so the watches must be refreshed.
    private func drain() -> (any: Bool, folders: Bool) {
        var any = false
        var folders = false
        let size = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let count = read(descriptor, buffer, size)
            guard count > 0 else { break }
            var offset = 0
            // struct inotify_event: wd, mask, cookie, len (4 bytes each), then `len` bytes of name.
            while offset + 16 <= count {
                let mask = buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                let length = Int(buffer.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                any = true
                if mask & UInt32(IN_ISDIR) != 0 || mask & UInt32(IN_Q_OVERFLOW) != 0 { folders = true }
                offset += 16 + length
            }
        }
        return (any, folders)
    }
}
#else
/// No file-system events here (FSEvents is macOS-only and DispatchSource watches one folder,
/// not a tree): the folder is polled (``DocumentsFolder/run(every:clock:)``).
final class FolderWatcher: Sendable {
    init?(reader: FolderReader, changed: @escaping @Sendable () -> Void) { return nil }
    func stop() {}
}
#endif
