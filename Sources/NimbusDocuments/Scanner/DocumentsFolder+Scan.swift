import Foundation
import GRDB
import Nimbus
import NimbusSync

/// The scan: what changed in the folder since the last pass becomes record changes.
extension DocumentsFolder {
    /// Scans the folder and queues a save or delete for each change found. A file that
    /// changes while it is read or staged is left for the next scan (nothing is lost: its
    /// last known state stays until a scan sees it hold still).
    func scanAndQueue() throws {
        let records = try documents()
        let byName = Dictionary(records.map { ($0.recordName, $0) }, uniquingKeysWith: { a, _ in a })
        let layout = TreeLayout(records)
        let known = try knownItems()
        let reader = self.reader
        let diff = ScanDiff.diff(known: known, disk: reader.snapshot()) { FileContent.stableHash(reader: reader, path: $0) }

        // Where each folder is now, for the new parent of what moved and what is new.
        var folderAt: [DocumentPath: String] = [:]
        var knownFolderAt: [DocumentPath: String] = [:]
        for item in known where item.entry.isFolder {
            knownFolderAt[item.path] = item.recordName
            if case .present(let path, _, _)? = diff.outcomes[item.recordName] { folderAt[path] = item.recordName }
        }
        var updates: [KnownItem] = []
        var forgotten: [String] = []
        var saves: [DocumentRecord] = []
        var deletes: [String] = []
        var sent: [DocumentsState.Sent] = []

        // New items, folders first: adopted when a record at that path holds the same thing
        // (turning sync on for a folder that has files), else new records.
        var knownNames = Set(known.map(\.recordName))
        for (path, entry, sha) in diff.created {
            guard let parentPath = path.parent, let name = path.name else { continue }
            guard parentPath == .root || folderAt[parentPath] != nil else { continue }
            let parent = parentPath == .root ? nil : folderAt[parentPath]
            if let candidate = layout.record(at: path), !knownNames.contains(candidate), let record = byName[candidate],
                record.kind == (entry.isFolder ? .folder : .file), entry.isFolder || record.sha256 == sha
            {
                knownNames.insert(candidate)
                updates.append(KnownItem(recordName: candidate, path: path, entry: entry, sha256: sha))
                if entry.isFolder { folderAt[path] = candidate }
                continue
            }
            let recordName = makeRecordName()
            if entry.isFolder {
                saves.append(DocumentRecord(recordName: recordName, kind: .folder, name: name, folder: parent))
                folderAt[path] = recordName
                updates.append(KnownItem(recordName: recordName, path: path, entry: entry, sha256: ""))
            } else if let staged = try stage(path, recordName: recordName) {
                saves.append(fileRecord(recordName, name: name, folder: parent, entry: staged.entry, sha: staged.sha, file: staged.url))
                sent.append(.init(recordName: recordName, sha256: staged.sha, staged: staged.url.path, name: name, folder: parent, modified: staged.entry.modified))
                updates.append(KnownItem(recordName: recordName, path: path, entry: staged.entry, sha256: staged.sha))
            }
        }

        // Known items: moved, renamed, changed or gone.
        for item in known {
            guard let outcome = diff.outcomes[item.recordName] else { continue }
            switch outcome {
            case .unsettled:
                continue
            case .gone:
                // Deleted here while another device changed its bytes: the edit wins (the
                // next write brings it back); otherwise the record goes.
                if let record = byName[item.recordName], item.entry.isFolder || record.sha256 == item.sha256 {
                    deletes.append(item.recordName)
                }
                forgotten.append(item.recordName)
            case .present(let path, let entry, let sha):
                guard var record = byName[item.recordName] else {
                    // Its record is gone (deleted elsewhere, or refused by the server): an edit
                    // here makes it a new document at the next scan.
                    if sha != item.sha256 { forgotten.append(item.recordName) }
                    continue
                }
                guard let parentPath = path.parent, let localName = path.name else { continue }
                var updated = KnownItem(recordName: item.recordName, path: path, entry: entry, sha256: sha)
                var changed = false
                if path != item.path {
                    // Moved or renamed here (or its folder was): what changed on disk changes
                    // the record. What did not stays as the record has it (perhaps another
                    // device's move or rename).
                    let parent = parentPath == .root ? nil : folderAt[parentPath]
                    if parentPath != .root && parent == nil { continue }  // its folder is not synced yet
                    let oldParentPath = item.path.parent ?? .root
                    let oldParent = oldParentPath == .root ? nil : knownFolderAt[oldParentPath]
                    if parent != oldParent, parent != record.folder {
                        record.folder = parent
                        changed = true
                    }
                    // The same local name keeps the true name (a mapped name like "a\u{F022}b" stays "a:b").
                    if localName != item.path.name, localName != layout.paths[item.recordName]?.name, localName != record.name {
                        record.name = localName
                        changed = true
                    }
                }
                if !entry.isFolder, sha != item.sha256, record.sha256 != item.sha256, sha != record.sha256 {
                    // Changed here and on another device since the last sync: the other
                    // device's bytes stay the document (written over this file by the pass),
                    // this edit becomes a conflict version beside it.
                    let versionName = makeRecordName()
                    guard let staged = try stage(path, recordName: versionName) else { continue }
                    let version = fileRecord(
                        versionName, name: ConflictName.name(for: record.name, device: device, date: now()),
                        folder: record.folder, entry: staged.entry, sha: staged.sha, file: staged.url, conflictOf: record.recordName)
                    saves.append(version)
                    sent.append(.init(recordName: versionName, sha256: staged.sha, staged: staged.url.path, name: version.name, folder: version.folder, modified: staged.entry.modified))
                    updated.entry = entry
                    updated.sha256 = item.sha256
                } else if !entry.isFolder, sha != item.sha256 {
                    guard let staged = try stage(path, recordName: item.recordName) else { continue }
                    record.size = staged.entry.size
                    record.sha256 = staged.sha
                    record.modified = Date(timeIntervalSince1970: Double(staged.entry.modified) / 1e9)
                    record.device = device
                    record.content = Nimbus.Asset(fileURL: staged.url)
                    sent.append(.init(recordName: record.recordName, sha256: staged.sha, staged: staged.url.path, name: record.name, folder: record.folder, modified: staged.entry.modified))
                    updated.entry = staged.entry
                    updated.sha256 = staged.sha
                    changed = true
                }
                if changed { saves.append(record) }
                if updated != item { updates.append(updated) }
            }
        }
        guard !updates.isEmpty || !forgotten.isEmpty || !saves.isEmpty || !deletes.isEmpty else { return }
        let zone = Self.zone
        let stagingFolder = staging
        try engine.store.write { db, outbox in
            for record in saves {
                let base = try LocalStore.record(in: db, zone: zone, name: record.recordName)
                try outbox.save(record.localRecord(zone: zone, base: base))
            }
            for name in deletes {
                try outbox.delete(zone: zone, recordName: name)
                try DocumentsState.dropSent(name, db)
            }
            let previous = Dictionary(try DocumentsState.sent(db).map { ($0.recordName, $0.staged) }, uniquingKeysWith: { a, _ in a })
            for item in updates { try DocumentsState.setKnown(item, db) }
            for name in forgotten { try DocumentsState.forgetKnown(name, db) }
            for entry in sent {
                // An earlier content of the same record not sent yet is replaced by this one.
                if let old = previous[entry.recordName], old != entry.staged, old.hasPrefix(stagingFolder.path) {
                    try? FileManager.default.removeItem(atPath: old)
                }
                try DocumentsState.setSent(entry, db)
            }
        }
    }

    /// A copy of the file at `path` for its upload, taken while it holds still; `nil` when it
    /// changed meanwhile (the next scan tries again).
    func stage(_ path: DocumentPath, recordName: String) throws -> (url: URL, sha: String, entry: DiskEntry)? {
        let destination = staging.appendingPathComponent("\(recordName)-\(UUID().uuidString)")
        guard let entry = reader.entry(at: path), !entry.isFolder,
            let sha = try FileContent.snapshot(reader.url(of: path), to: destination, reader: reader, path: path)
        else { return nil }
        return (destination, sha, entry)
    }

    func fileRecord(
        _ recordName: String, name: String, folder: String?, entry: DiskEntry, sha: String, file: URL, conflictOf: String? = nil
    ) -> DocumentRecord {
        DocumentRecord(
            recordName: recordName, kind: .file, name: name, folder: folder, size: entry.size, sha256: sha,
            modified: Date(timeIntervalSince1970: Double(entry.modified) / 1e9), device: device, conflictOf: conflictOf,
            content: Nimbus.Asset(fileURL: file))
    }
}
