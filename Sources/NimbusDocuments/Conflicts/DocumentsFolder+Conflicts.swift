import Foundation
import GRDB
import Nimbus
import NimbusSync

/// Conflicts: when two devices change one document at once, the server keeps the edit that
/// reached it first and this device keeps its own as a conflict version beside it, named for
/// the device and the time, until the app resolves it.
extension DocumentsFolder {
    /// After a send: each content this device sent that the server's record does not hold
    /// (another device's edit won the merge, or the record was deleted meanwhile) becomes a
    /// conflict version, a record of its own with the staged bytes. Returns whether any did
    /// (they are then to be sent).
    func keepLostEdits() throws -> Bool {
        let zone = Self.zone
        let device = self.device
        let makeName = makeRecordName
        return try engine.store.write { db, outbox -> Bool in
            var kept = false
            let pending = Set(try outbox.pending().map(\.recordName))
            try DocumentsState.noteOnServer(db, zone: zone)
            let onServer = try DocumentsState.onServer(db)
            for sent in try DocumentsState.sent(db) where !pending.contains(sent.recordName) {
                let local = try LocalStore.record(in: db, zone: zone, name: sent.recordName)
                let record = local.flatMap(DocumentRecord.init)
                if record == nil, !onServer.contains(sent.recordName) {
                    // Refused for good by the server (too large, over quota: the engine's
                    // given-up changes say why), not taken over: the file stays on disk as it is.
                    try DocumentsState.dropSent(sent.recordName, db)
                    continue
                }
                if record?.sha256 == sent.sha256 {
                    // The server holds it: the staged copy is no longer needed.
                    try? FileManager.default.removeItem(atPath: sent.staged)
                    try DocumentsState.forgetSent(sent.recordName, db)
                    continue
                }
                guard FileManager.default.fileExists(atPath: sent.staged) else {
                    try DocumentsState.forgetSent(sent.recordName, db)
                    continue
                }
                let modified = Date(timeIntervalSince1970: Double(sent.modified) / 1e9)
                let attributes = try? FileManager.default.attributesOfItem(atPath: sent.staged)
                let size = (attributes?[.size] as? NSNumber)?.int64Value ?? 0
                let versionName = makeName()
                let version = DocumentRecord(
                    recordName: versionName, kind: .file,
                    name: record == nil ? sent.name : ConflictName.name(for: sent.name, device: device, date: modified),
                    folder: record?.folder ?? sent.folder, size: size,
                    sha256: sent.sha256, modified: modified, device: device, conflictOf: record?.recordName,
                    content: Nimbus.Asset(fileURL: URL(fileURLWithPath: sent.staged)))
                try outbox.save(version.localRecord(zone: zone))
                try DocumentsState.forgetSent(sent.recordName, db)
                try DocumentsState.setSent(
                    .init(recordName: versionName, sha256: sent.sha256, staged: sent.staged, name: version.name, folder: version.folder, modified: sent.modified), db)
                kept = true
            }
            return kept
        }
    }

    /// The unresolved conflict versions of the document at `path`
    /// (`NSFileVersion.unresolvedConflictVersionsOfItem(at:)`), oldest first.
    public func unresolvedConflictVersions(of path: DocumentPath) throws -> [ConflictVersion] {
        let records = try documents()
        let layout = TreeLayout(records)
        guard let original = layout.record(at: path) else { throw DocumentsError.notFound(path.description) }
        return records.filter { $0.conflictOf == original }.compactMap { record in
            layout.paths[record.recordName].map {
                ConflictVersion(path: $0, recordName: record.recordName, device: record.device, modified: record.modified, size: record.size)
            }
        }.sorted { ($0.modified, $0.recordName) < ($1.modified, $1.recordName) }
    }

    /// Resolves the conflicts of the document at `path`: keeps it as it is, takes one
    /// version's bytes, or keeps both (each version becomes a document of its own). The
    /// change is sent and written to disk at once.
    public func resolveConflicts(of path: DocumentPath, keeping resolution: ConflictResolution) async throws {
        let versions = try unresolvedConflictVersions(of: path)
        let records = try documents()
        guard let originalName = TreeLayout(records).record(at: path),
            let original = records.first(where: { $0.recordName == originalName })
        else { throw DocumentsError.notFound(path.description) }
        let zone = Self.zone
        switch resolution {
        case .keepBoth:
            try engine.store.write { db, outbox in
                for version in versions {
                    guard let local = try LocalStore.record(in: db, zone: zone, name: version.recordName),
                        var record = DocumentRecord(local)
                    else { continue }
                    record.conflictOf = nil
                    try outbox.save(record.localRecord(zone: zone, base: local))
                }
            }
        case .keepCurrent:
            try engine.store.write { db, outbox in
                for version in versions {
                    try outbox.delete(zone: zone, recordName: version.recordName)
                    try DocumentsState.dropSent(version.recordName, db)
                }
            }
        case .keepVersion(let chosen):
            guard versions.contains(where: { $0.recordName == chosen.recordName }),
                let local = try engine.store.record(zone: zone, name: chosen.recordName),
                let source = try await engine.assetFile(for: local, field: DocumentRecord.contentField)
            else { throw DocumentsError.unknownConflictVersion(chosen.path.description) }
            let staged = staging.appendingPathComponent("\(original.recordName)-\(UUID().uuidString)")
            let sha = try FileContent.copy(source, to: staged)
            var record = original
            record.sha256 = sha
            record.size = chosen.size
            record.modified = chosen.modified
            record.device = DocumentRecord(local)?.device ?? device
            record.content = Nimbus.Asset(fileURL: staged)
            let modified = Int64((chosen.modified.timeIntervalSince1970 * 1e9).rounded())
            try engine.store.write { db, outbox in
                let base = try LocalStore.record(in: db, zone: zone, name: original.recordName)
                try outbox.save(record.localRecord(zone: zone, base: base))
                for version in versions {
                    try outbox.delete(zone: zone, recordName: version.recordName)
                    try DocumentsState.dropSent(version.recordName, db)
                }
                try DocumentsState.setSent(
                    .init(recordName: original.recordName, sha256: sha, staged: staged.path, name: original.name, folder: original.folder, modified: modified), db)
            }
            // The document's file takes the chosen bytes now (its record is pending, so the
            // pass would not download them).
            if let item = try knownItems().first(where: { $0.recordName == original.recordName }) {
                _ = try await place(record, at: item.path, replacing: item)
            }
        }
        try await sync()
    }
}
