import NimbusProtocol
import NimbusSync

/// The Reading List's data in the user's private database, as the News app keeps it: the
/// bookmarks in one zone, the reading history in another, one database subscription.
public enum ReadingListSchema {
    /// Zone of ``Bookmark`` records.
    public static let bookmarksZone = "ReadingList"
    /// Zone of ``ReadState`` records (one per article read, named like its bookmark).
    public static let historyZone = "ReadingHistory"
    public static let zones = [bookmarksZone, historyZone]
    public static let subscriptionID = "reading-list"

    public static let bookmarkType = "Bookmark"
    public static let historyType = "History"

    /// Bookmark fields.
    public enum BookmarkField {
        public static let url = "url"
        public static let title = "title"
        public static let addedAt = "addedAt"
        public static let editedAt = "editedAt"
        /// An optional picture of the article: an asset, uploaded with the bookmark and
        /// downloaded lazily on the other devices.
        public static let thumbnail = "thumbnail"
    }

    /// History fields.
    public enum HistoryField {
        public static let url = "url"
        /// How often the article was read, on any device: an additive counter.
        public static let readCount = "readCount"
        public static let lastReadAt = "lastReadAt"
        public static let editedAt = "editedAt"
    }

    /// How conflicts resolve: the user's latest edit wins (by `editedAt`), and read counts
    /// add up, so two devices marking an article read at once count two reads.
    public static let mergeRules: [String: MergeRules] = [
        bookmarkType: MergeRules(defaultPolicy: .latestEdit(timestampField: BookmarkField.editedAt)),
        historyType: MergeRules(
            fields: [HistoryField.readCount: .counter],
            defaultPolicy: .latestEdit(timestampField: HistoryField.editedAt)),
    ]

    /// The sync engine's configuration for the Reading List.
    public static func syncConfiguration() -> SyncConfiguration {
        SyncConfiguration(zones: zones, subscriptionID: subscriptionID, mergeRules: mergeRules)
    }
}
