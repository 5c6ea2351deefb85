import Foundation
import Nimbus
import NimbusProtocol
import NimbusSync

/// The shared photo album on one device: albums and photos live in the local store (read
/// without a network), edits go to the outbox, and the ``SyncEngine`` syncs the user's own
/// albums (private database) beside those others share with them (shared database).
/// Sharing itself (inviting, joining, leaving) talks to the server.
///
/// ```swift
/// let app = try SharedAlbum(container: container, storePath: "album.sqlite")
/// try await app.engine.start()
/// let summer = try app.createAlbum(title: "Summer")
/// try app.addPhoto(to: summer, file: beach, caption: "Beach")
/// try await app.sync()
/// let url = try await app.share(summer, with: [.init(userRecordName: bob, permission: .readWrite)])
/// // Bob, on his device:
/// let album = try await bobsApp.join(url)
/// ```
public final class SharedAlbum: Sendable {
    public let container: Container
    public let engine: SyncEngine
    /// Milliseconds since the epoch, for `addedAt` and `editedAt`.
    let now: @Sendable () -> Int64

    public var store: LocalStore { engine.store }

    public init(
        container: Container, storePath: String,
        now: @escaping @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }
    ) throws {
        self.container = container
        self.engine = SyncEngine(
            service: DatabaseSyncService(database: container.privateCloudDatabase),
            store: try LocalStore(path: storePath), configuration: AlbumSchema.syncConfiguration())
        self.now = now
    }

    // MARK: - Reading (local, no network)

    /// Every album on the device: the user's own first, then the shared ones, by title.
    public func albums() throws -> [Album] {
        var albums = try albums(inZone: AlbumSchema.zone, owned: true)
        for zoneID in try store.sharedZoneIDs() { albums += try self.albums(inZone: zoneID.localZoneName, owned: false) }
        return albums
    }

    private func albums(inZone zone: String, owned: Bool) throws -> [Album] {
        try store.records(inZone: zone).filter { $0.recordType == AlbumSchema.albumType }.map { record in
            let share = try store.share(inZone: zone, rootRecordName: record.recordName)
            let permission: Share.Participant.Permission =
                owned ? .readWrite : share?.currentUserParticipant?.permission ?? .readOnly
            return Album(
                zone: zone, recordName: record.recordName,
                title: record[AlbumSchema.AlbumField.title]?.stringValue ?? "", isOwned: owned, permission: permission,
                shareURL: share?.url, participants: share?.participants ?? [])
        }.sorted { ($0.title, $0.recordName) < ($1.title, $1.recordName) }
    }

    /// The album an argument names: its title or record name (or a unique prefix of it).
    public func album(_ reference: String) throws -> Album {
        let albums = try albums()
        if let exact = albums.first(where: { $0.title == reference || $0.recordName == reference }) { return exact }
        let matches = albums.filter { $0.recordName.hasPrefix(reference) }
        guard !reference.isEmpty, matches.count == 1 else { throw AlbumError.noSuchAlbum(reference) }
        return matches[0]
    }

    /// The album's photos, oldest first.
    public func photos(in album: Album) throws -> [Photo] {
        try store.records(inZone: album.zone).compactMap(Photo.init)
            .filter { $0.albumName == album.recordName }
            .sorted { ($0.addedAt, $0.recordName) < ($1.addedAt, $1.recordName) }
    }

    /// The photo an argument names (its record name, or a unique prefix of it), in any album.
    public func photo(_ reference: String) throws -> Photo {
        var matches: [Photo] = []
        for album in try albums() {
            matches += try photos(in: album).filter { $0.recordName.hasPrefix(reference) }
        }
        if let exact = matches.first(where: { $0.recordName == reference }) { return exact }
        guard !reference.isEmpty, matches.count == 1 else { throw AlbumError.noSuchPhoto(reference) }
        return matches[0]
    }

    // MARK: - Editing (local store + outbox; no network)

    /// Creates an album of the user's own.
    @discardableResult
    public func createAlbum(title: String) throws -> Album {
        let name = UUID().uuidString.lowercased()
        try store.write { _, outbox in
            try outbox.save(
                LocalRecord(
                    zoneName: AlbumSchema.zone, recordName: name, recordType: AlbumSchema.albumType,
                    fields: [AlbumSchema.AlbumField.title: .string(title), AlbumSchema.AlbumField.createdAt: .timestamp(now())]))
        }
        return try album(name)
    }

    /// Adds a picture to an album (the user's own, or one shared with them read-write). The
    /// file is uploaded with the photo's next send and must stay in place until then.
    @discardableResult
    public func addPhoto(to album: Album, file: URL, caption: String) throws -> Photo {
        guard album.canEdit else { throw AlbumError.readOnly(album.title) }
        guard FileManager.default.isReadableFile(atPath: file.path) else { throw AlbumError.unreadableFile(file.path) }
        let time = now()
        var record = LocalRecord(
            zoneName: album.zone, recordName: UUID().uuidString.lowercased(), recordType: AlbumSchema.photoType,
            fields: [
                AlbumSchema.PhotoField.caption: .string(caption), AlbumSchema.PhotoField.addedAt: .timestamp(time),
                AlbumSchema.PhotoField.editedAt: .timestamp(time),
                AlbumSchema.PhotoField.image: Nimbus.Asset(fileURL: file).fieldValue,
            ], parent: album.recordName)
        try write(album) { outbox in try outbox.save(record) }
        record.isPending = true
        return Photo(record)!
    }

    /// Changes a photo's caption (the later edit wins a conflict).
    public func setCaption(_ caption: String, of photo: Photo) throws {
        let album = try album(photo.albumName)
        var changed = photo
        changed.caption = caption
        changed.editedAt = max(now(), photo.editedAt + 1)
        try write(album) { outbox in try outbox.save(changed.record) }
    }

    /// Removes a photo.
    public func remove(_ photo: Photo) throws {
        let album = try album(photo.albumName)
        try write(album) { outbox in try outbox.delete(zone: photo.zone, recordName: photo.recordName) }
    }

    /// An outbox write; the engine's refusal of a read-only zone becomes ``AlbumError/readOnly(_:)``.
    private func write(_ album: Album, _ body: (Outbox) throws -> Void) throws {
        do {
            try store.write { _, outbox in try body(outbox) }
        } catch let error as NimbusError where error.code == .permissionFailure {
            throw AlbumError.readOnly(album.title)
        }
    }

    // MARK: - Syncing

    /// Fetches what changed (own and shared albums), then sends this device's edits.
    public func sync() async throws {
        try await engine.fetchChanges()
        try await engine.sendChanges()
    }

    /// The file of a photo's picture (downloaded into the engine's cache when needed).
    public func imageFile(of photo: Photo) async throws -> URL? {
        guard let record = try store.record(zone: photo.zone, name: photo.recordName) else { return nil }
        return try await engine.assetFile(for: record, field: AlbumSchema.PhotoField.image)
    }
}
