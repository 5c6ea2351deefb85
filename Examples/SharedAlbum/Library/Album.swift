import Foundation
import Nimbus
import NimbusProtocol
import NimbusSync

/// An album as a device sees it: the user's own, or one another user shares with them.
public struct Album: Sendable, Hashable, Identifiable {
    /// The album's zone in the local store (``ZoneID/localZoneName``): ``AlbumSchema/zone``
    /// for the user's own albums, the owner's zone for shared ones.
    public var zone: String
    /// The album record's name.
    public var recordName: String
    public var title: String
    /// Whether the signed-in user owns it.
    public var isOwned: Bool
    /// What the user may do: ``Share/Participant/Permission/readWrite`` for the owner.
    public var permission: Share.Participant.Permission
    /// The share's URL, once the album is shared (the owner sends it to people).
    public var shareURL: URL?
    /// Everyone the album is shared with (empty when it is not shared).
    public var participants: [Share.Participant]

    public var id: String { zone + "/" + recordName }
    public var canEdit: Bool { permission == .readWrite }
}

/// A photo of an album: a `Photo` record whose parent is its album.
public struct Photo: Sendable, Hashable, Identifiable {
    public var zone: String
    public var recordName: String
    /// The album record's name.
    public var albumName: String
    public var caption: String
    public var addedAt: Int64
    public var editedAt: Int64
    /// The picture: a local file until uploaded, then the server's description of it.
    public var image: Nimbus.Asset?
    /// A local change is waiting to be sent.
    public var isPending: Bool

    public var id: String { zone + "/" + recordName }

    init?(_ record: LocalRecord) {
        typealias F = AlbumSchema.PhotoField
        guard record.recordType == AlbumSchema.photoType, let parent = record.parent else { return nil }
        zone = record.zoneName
        recordName = record.recordName
        albumName = parent
        caption = record[F.caption]?.stringValue ?? ""
        addedAt = record[F.addedAt]?.timestampValue ?? 0
        editedAt = record[F.editedAt]?.timestampValue ?? 0
        image = record[F.image].flatMap(Nimbus.Asset.init(fieldValue:))
        isPending = record.isPending
    }

    var record: LocalRecord {
        typealias F = AlbumSchema.PhotoField
        var fields: [String: FieldValue] = [
            F.caption: .string(caption), F.addedAt: .timestamp(addedAt), F.editedAt: .timestamp(editedAt),
        ]
        fields[F.image] = image?.fieldValue
        return LocalRecord(
            zoneName: zone, recordName: recordName, recordType: AlbumSchema.photoType, fields: fields, parent: albumName)
    }
}

/// What the album app refuses, in words for its user.
public enum AlbumError: Error, Equatable, CustomStringConvertible {
    case noSuchAlbum(String)
    case noSuchPhoto(String)
    /// The album is shared with the user read-only.
    case readOnly(String)
    /// Only the owner shares an album or changes who it is shared with.
    case notOwner(String)
    case notShared(String)
    case unreadableFile(String)

    public var description: String {
        switch self {
        case .noSuchAlbum(let name): return "no album '\(name)'"
        case .noSuchPhoto(let name): return "no photo '\(name)'"
        case .readOnly(let title): return "'\(title)' is shared with you read-only: you cannot change it"
        case .notOwner(let title): return "only the owner of '\(title)' can share it"
        case .notShared(let title): return "'\(title)' is not shared"
        case .unreadableFile(let path): return "cannot read \(path)"
        }
    }
}
