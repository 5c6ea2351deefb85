import Foundation
import GRDB
import Nimbus
import NimbusSync

/// Writing the records to disk: what other devices created, changed, moved, renamed and
/// deleted. Nothing is written outside the folder, and nothing that changed on disk since
/// the scan is overwritten or removed (the next scan picks it up instead).
extension DocumentsFolder {
    func writeToDisk() async throws {
        let records = try documents()
        let layout = TreeLayout(records)
        let byName = Dictionary(records.map { ($0.recordName, $0) }, uniquingKeysWith: { a, _ in a })
        var known = Dictionary(try knownItems().map { ($0.recordName, $0) }, uniquingKeysWith: { a, _ in a })
        let zone = Self.zone
        let (wanted, pending, onServer) = try engine.store.write { db, _ in
            try DocumentsState.noteOnServer(db, zone: zone)
            return (
                try DocumentsState.wanted(db), Set(try LocalStore.records(in: db, zone: zone).filter(\.isPending).map(\.recordName)),
                try DocumentsState.onServer(db)
            )
        }

        // 1. Deleted elsewhere: removed here, deepest first, if unchanged since the scan. A
        //    record the server never had (its save was refused for good, see the engine's
        //    given-up changes) is no deletion: its file stays, unsynced.
        for item in known.values.sorted(by: { $0.path > $1.path }) where byName[item.recordName] == nil {
            guard onServer.contains(item.recordName) else { continue }
            if isUnchanged(item), (try? reader.checkWritable(item.path)) != nil {
                if item.entry.isFolder {
                    removeFolderIfEmpty(item.path)
                } else {
                    try? FileManager.default.removeItem(at: reader.url(of: item.path))
                }
            }
            known[item.recordName] = nil
            try engine.store.write { db, _ in
                try DocumentsState.forgetKnown(item.recordName, db)
                try DocumentsState.forgetOnServer(item.recordName, db)
            }
        }

        // 2. Known items standing where another record goes (two names swapped, a name
        //    freed by a rename) step aside first, so every move below goes to a free place.
        var targets: [[NameKey]: String] = [:]
        for (recordName, path) in layout.paths { targets[path.components.map(NameKey.init)] = recordName }
        for item in known.values.sorted(by: { $0.path > $1.path }) {
            guard let target = layout.paths[item.recordName], target != item.path,
                let other = targets[item.path.components.map(NameKey.init)], other != item.recordName,
                let parent = item.path.parent, isUnchanged(item),
                (try? reader.checkWritable(item.path)) != nil
            else { continue }
            let aside = DocumentPath(checked: parent.components + [FolderReader.temporaryPrefix + "moving-" + item.recordName])
            try FileManager.default.moveItem(at: reader.url(of: item.path), to: reader.url(of: aside))
            try relocate(item.recordName, to: aside, known: &known)
        }

        // 3. Every record at its place, parents first: moved, created, downloaded. An item
        //    that cannot be placed now (its folder could not be, a link in the way) waits for
        //    the next pass; a failed download fails the pass after the others are placed.
        let ordered = layout.paths.sorted { ($0.value.components.count, $0.value) < ($1.value.components.count, $1.value) }
        var failure: (any Error)?
        for (recordName, target) in ordered {
            guard let record = byName[recordName] else { continue }
            do {
                try await settle(record, at: target, known: &known, wanted: wanted.contains(recordName), pending: pending.contains(recordName))
            } catch let error as NimbusError {
                failure = failure ?? error
            } catch {
                continue  // a path refused, a file system error: the next pass tries again
            }
        }
        if let failure { throw failure }
    }

    /// Puts one record where the layout says: moves its known item there, writes its new
    /// bytes, creates its folder, or downloads it (unless it waits on demand).
    private func settle(
        _ record: DocumentRecord, at target: DocumentPath, known: inout [String: KnownItem], wanted: Bool, pending: Bool
    ) async throws {
        let recordName = record.recordName
        if var item = known[recordName] {
            if item.path != target {
                guard let moved = try move(item, to: target, known: &known) else { return }
                item = moved
            }
            if record.kind == .file, record.sha256 != item.sha256, !pending, isUnchanged(item),
                let written = try await place(record, at: target, replacing: item)
            {
                known[recordName] = written
            }
        } else if record.kind == .folder {
            try reader.checkWritable(target)
            if reader.entry(at: target) == nil {
                try FileManager.default.createDirectory(at: reader.url(of: target), withIntermediateDirectories: false)
            }
            guard let entry = reader.entry(at: target), entry.isFolder else { return }
            let item = KnownItem(recordName: recordName, path: target, entry: entry, sha256: "")
            known[recordName] = item
            try engine.store.write { db, _ in try DocumentsState.setKnown(item, db) }
        } else if policy == .keepEverythingLocal || wanted || pending {
            guard reader.entry(at: target) == nil else { return }  // something new there: the next scan decides
            if let written = try await place(record, at: target, replacing: nil) { known[recordName] = written }
        }
    }

    /// Moves a known item to `target`, moving aside (to a temporary name) another known item
    /// that is in the way and will move too. Returns the item at its new place, or `nil`
    /// when it could not move now (changed since the scan, or something new in the way).
    private func move(_ item: KnownItem, to target: DocumentPath, known: inout [String: KnownItem]) throws -> KnownItem? {
        guard isUnchanged(item) else { return nil }
        try reader.checkWritable(item.path)
        try reader.checkWritable(target)
        if let blocking = reader.entry(at: target), blocking.inode != item.entry.inode || blocking.inode == 0 {
            guard let other = known.values.first(where: { $0.path == target }), other.recordName != item.recordName,
                let parent = target.parent
            else { return nil }
            let aside = DocumentPath(checked: parent.components + [FolderReader.temporaryPrefix + "moving-" + other.recordName])
            try FileManager.default.moveItem(at: reader.url(of: target), to: reader.url(of: aside))
            try relocate(other.recordName, to: aside, known: &known)
        }
        var from = item.path
        if from.components.map(NameKey.init) == target.components.map(NameKey.init), let parent = from.parent {
            // A case-only rename: through a temporary name, as a case-insensitive disk needs.
            let aside = DocumentPath(checked: parent.components + [FolderReader.temporaryPrefix + "renaming-" + item.recordName])
            try FileManager.default.moveItem(at: reader.url(of: from), to: reader.url(of: aside))
            from = aside
        }
        try FileManager.default.moveItem(at: reader.url(of: from), to: reader.url(of: target))
        try relocate(item.recordName, to: target, known: &known)
        return known[item.recordName]
    }

    /// Records that `recordName` (and, for a folder, everything in it) is now at `path`.
    private func relocate(_ recordName: String, to path: DocumentPath, known: inout [String: KnownItem]) throws {
        guard let old = known[recordName]?.path else { return }
        var changed: [KnownItem] = []
        for var item in known.values where item.path.isWithin(old) {
            item.path = DocumentPath(checked: path.components + item.path.components.dropFirst(old.components.count))
            if item.recordName == recordName, let entry = reader.entry(at: path) { item.entry = entry }
            known[item.recordName] = item
            changed.append(item)
        }
        try engine.store.write { db, _ in for item in changed { try DocumentsState.setKnown(item, db) } }
    }

    /// Writes a record's bytes at `target`: downloaded (or this device's own pending copy)
    /// into a temporary file in the same folder, then renamed into place, so a reader never
    /// sees half a file. Returns the item as written, or `nil` when the file on disk changed
    /// meanwhile (kept; the next scan picks it up).
    func place(_ record: DocumentRecord, at target: DocumentPath, replacing item: KnownItem?) async throws -> KnownItem? {
        try reader.checkWritable(target)
        guard let parent = target.parent, let local = try engine.store.record(zone: Self.zone, name: record.recordName),
            let source = try await engine.assetFile(for: local, field: DocumentRecord.contentField)
        else { return nil }
        let temporary = DocumentPath(checked: parent.components + [FolderReader.downloadPrefix + UUID().uuidString])
        let temporaryURL = reader.url(of: temporary)
        try? FileManager.default.removeItem(at: temporaryURL)
        try FileManager.default.copyItem(at: source, to: temporaryURL)
        try? FileManager.default.setAttributes([.modificationDate: record.modified], ofItemAtPath: temporaryURL.path)
        // Still as the scan left it (or still free)?
        let current = reader.entry(at: target)
        guard current == item?.entry else {
            try? FileManager.default.removeItem(at: temporaryURL)
            return nil
        }
        if item != nil { try FileManager.default.removeItem(at: reader.url(of: target)) }
        try FileManager.default.moveItem(at: temporaryURL, to: reader.url(of: target))
        guard let entry = reader.entry(at: target) else { return nil }
        let written = KnownItem(recordName: record.recordName, path: target, entry: entry, sha256: record.sha256)
        try engine.store.write { db, _ in try DocumentsState.setKnown(written, db) }
        return written
    }

    /// Whether `item` is on disk as the last pass left it: a file with the same inode, size
    /// and time; a folder with the same inode (its time moves whenever what it holds does).
    func isUnchanged(_ item: KnownItem) -> Bool {
        guard let entry = reader.entry(at: item.path) else { return false }
        return item.entry.isFolder ? entry.isFolder && entry.inode == item.entry.inode : entry == item.entry
    }

    private func removeFolderIfEmpty(_ path: DocumentPath) {
        let url = reader.url(of: path)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: url.path),
            names.allSatisfy(FolderReader.ignoredNames.contains)
        else { return }
        try? FileManager.default.removeItem(at: url)
    }
}
