import Foundation
import Nimbus
import NimbusProtocol
import NimbusSync

extension SharedAlbum {
    /// Shares one of the user's albums (with its photos: their parent is the album), or
    /// changes who it is shared with. Returns the share's URL to send to the participants.
    ///
    /// ```swift
    /// let url = try await app.share(summer, with: [.init(userRecordName: bob, permission: .readOnly)])
    /// ```
    ///
    /// - Parameters:
    ///   - participants: people to invite (or whose permission changes).
    ///   - publicPermission: lets anyone with the URL join, with this permission.
    @discardableResult
    public func share(
        _ album: Album, with participants: [Share.Participant], publicPermission: Share.Participant.Permission? = nil
    ) async throws -> URL {
        guard album.isOwned else { throw AlbumError.notOwner(album.title) }
        // The album must be on the server before it can be shared.
        try await engine.sendChanges()
        let database = container.privateCloudDatabase
        let rootID = Record.ID(recordName: album.recordName, zoneID: ZoneID(zoneName: AlbumSchema.zone))
        let root = try await database.record(for: rootID)
        var share: Share
        var isNew = false
        if let existing = root.share {
            share = try await database.share(for: existing.recordID(relativeTo: rootID))
        } else {
            share = Share(rootRecord: root)
            share.title = album.title
            isNew = true
        }
        for participant in participants { share.addParticipant(participant) }
        if let publicPermission { share.publicPermission = publicPermission }
        let saved: Share
        if isNew {
            saved = try await database.save(share, rootRecord: root).share
        } else {
            saved = try await database.save(share)
        }
        try await engine.fetchChanges()
        guard let url = saved.url else { throw NimbusError.init(.serverRejectedRequest, "the saved share has no URL") }
        return url
    }

    /// Stops sharing an album with one person: their copy of it disappears from their
    /// devices at their next fetch (a push tells them at once).
    public func removeParticipant(_ participant: Share.Participant, from album: Album) async throws {
        var share = try await ownedShare(of: album)
        share.removeParticipant(participant)
        _ = try await container.privateCloudDatabase.save(share)
        try await engine.fetchChanges()
    }

    /// Changes what a participant may do with an album.
    public func setPermission(
        _ permission: Share.Participant.Permission, for participant: Share.Participant, in album: Album
    ) async throws {
        var share = try await ownedShare(of: album)
        share.setPermission(permission, for: participant)
        _ = try await container.privateCloudDatabase.save(share)
        try await engine.fetchChanges()
    }

    /// Stops sharing an album with everyone (deletes its share).
    public func stopSharing(_ album: Album) async throws {
        let share = try await ownedShare(of: album)
        try await container.privateCloudDatabase.deleteRecord(withID: share.id)
        try await engine.fetchChanges()
    }

    /// Joins the album a share URL names: accepts the share and fetches it. Returns the
    /// album, now on this device (and on the user's other devices at their next fetch).
    @discardableResult
    public func join(_ url: URL) async throws -> Album {
        let metadata = try await container.shareMetadata(for: url)
        if metadata.participantStatus != .accepted { try await container.accept(metadata) }
        try await engine.fetchChanges()
        let zone = metadata.zoneID.localZoneName
        guard let name = metadata.rootRecordID?.recordName,
            let album = try albums().first(where: { $0.zone == zone && $0.recordName == name })
        else { throw AlbumError.noSuchAlbum(metadata.share.title ?? url.absoluteString) }
        return album
    }

    /// Leaves an album someone shared with this user: it disappears from their devices.
    public func leave(_ album: Album) async throws {
        guard !album.isOwned else { throw AlbumError.notShared(album.title) }
        guard let share = try store.share(inZone: album.zone, rootRecordName: album.recordName) else {
            throw AlbumError.notShared(album.title)
        }
        try await container.leave(share)
        try await engine.fetchChanges()
    }

    private func ownedShare(of album: Album) async throws -> Share {
        guard album.isOwned else { throw AlbumError.notOwner(album.title) }
        let database = container.privateCloudDatabase
        let rootID = Record.ID(recordName: album.recordName, zoneID: ZoneID(zoneName: AlbumSchema.zone))
        guard let shareReference = try await database.record(for: rootID).share else {
            throw AlbumError.notShared(album.title)
        }
        return try await database.share(for: shareReference.recordID(relativeTo: rootID))
    }
}
