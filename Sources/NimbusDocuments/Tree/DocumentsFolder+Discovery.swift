import Foundation
import GRDB
import NimbusSync

/// Discovery: the synced tree as the app lists and observes it (`NSMetadataQuery`), and
/// documents downloaded on demand.
extension DocumentsFolder {
    /// Every document and folder, downloaded or not, by path.
    public func items() throws -> [DocumentItem] {
        let records = try documents()
        let layout = TreeLayout(records)
        let (known, pending) = try engine.store.read { db in
            (
                Dictionary(try DocumentsState.known(db).map { ($0.recordName, $0) }, uniquingKeysWith: { a, _ in a }),
                Set(try LocalStore.records(in: db, zone: Self.zone).filter(\.isPending).map(\.recordName))
            )
        }
        return records.compactMap { record -> DocumentItem? in
            guard let path = layout.paths[record.recordName] else { return nil }
            let downloaded = record.kind == .folder ? known[record.recordName] != nil : known[record.recordName]?.sha256 == record.sha256
            return DocumentItem(
                path: path, name: record.name, kind: record.kind, recordName: record.recordName, size: record.size,
                sha256: record.sha256, modified: record.modified, device: record.device, isDownloaded: downloaded,
                isUploading: pending.contains(record.recordName), conflictOf: record.conflictOf)
        }.sorted { $0.path < $1.path }
    }

    /// The item at `path`, or `nil`.
    public func item(at path: DocumentPath) throws -> DocumentItem? {
        let key = path.components.map(NameKey.init)
        return try items().first { $0.path.components.map(NameKey.init) == key }
    }

    /// The items after each sync pass (the first value at once): what an `NSMetadataQuery`
    /// observer receives. Each call returns a new subscriber.
    public func observe() -> AsyncStream<[DocumentItem]> {
        let (stream, continuation) = AsyncStream<[DocumentItem]>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        observers[id] = continuation
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            Task { await self.removeObserver(id) }
        }
        if let items = try? items() { continuation.yield(items) }
        return stream
    }

    private func removeObserver(_ id: UUID) {
        observers[id] = nil
    }

    func notifyObservers() {
        guard !observers.isEmpty, let items = try? items() else { return }
        for continuation in observers.values { continuation.yield(items) }
    }

    /// Downloads the document at `path` (a placeholder under ``DownloadPolicy/onDemand``) and
    /// keeps it on the device from then on; returns its file in the folder.
    public func download(_ path: DocumentPath) async throws -> URL {
        let records = try documents()
        let layout = TreeLayout(records)
        guard let recordName = layout.record(at: path), let target = layout.paths[recordName],
            records.contains(where: { $0.recordName == recordName && $0.kind == .file })
        else { throw DocumentsError.notFound(path.description) }
        try engine.store.write { db, _ in try DocumentsState.want(recordName, db) }
        try await writeToDisk()
        guard try knownItems().contains(where: { $0.recordName == recordName }) else {
            throw DocumentsError.alreadyExists(target.description)
        }
        return reader.url(of: target)
    }
}
