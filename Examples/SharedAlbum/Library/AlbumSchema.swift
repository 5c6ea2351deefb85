import Nimbus
import NimbusProtocol
import NimbusSync

/// Where the shared photo album keeps its data: each user's own albums in one zone of their
/// private database (an album is the root of a record hierarchy, its photos are its
/// children), and the albums others share with them in their shared database.
public enum AlbumSchema {
    /// The private zone of the user's own ``Album`` and ``Photo`` records.
    public static let zone = "Albums"
    public static let subscriptionID = "shared-album"

    public static let albumType = "Album"
    public static let photoType = "Photo"

    public enum AlbumField {
        public static let title = "title"
        public static let createdAt = "createdAt"
    }

    public enum PhotoField {
        /// The picture: an asset, uploaded before the photo's record is saved, downloaded on
        /// demand elsewhere.
        public static let image = "image"
        public static let caption = "caption"
        public static let addedAt = "addedAt"
        /// When the caption last changed (milliseconds): the later edit wins a conflict.
        public static let editedAt = "editedAt"
    }

    public static let mergeRules: [String: MergeRules] = [
        photoType: MergeRules(defaultPolicy: .latestEdit(timestampField: PhotoField.editedAt))
    ]

    /// The fields sealed on the device, end to end: the server and its operator never read a
    /// caption; the people an album is shared with do (docs/ENCRYPTION.md, "Sharing").
    public static let encryptedFields: [String: Set<String>] = [photoType: [PhotoField.caption]]

    /// The sync engine's configuration: the private zone, and the shared database beside it.
    public static func syncConfiguration() -> SyncConfiguration {
        var configuration = SyncConfiguration(zones: [zone], subscriptionID: subscriptionID, mergeRules: mergeRules)
        configuration.syncsSharedDatabase = true
        configuration.encryptedFields = encryptedFields
        return configuration
    }
}
