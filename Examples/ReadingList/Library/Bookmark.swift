import Foundation
import Nimbus
import NimbusProtocol
import NimbusSync

/// A saved article: a `Bookmark` record in the ReadingList zone.
public struct Bookmark: Sendable, Hashable, Identifiable {
    /// The record name: derived from the URL, so the same article bookmarked on two devices
    /// is one record.
    public var id: String
    public var url: String
    public var title: String
    /// Milliseconds since the epoch.
    public var addedAt: Int64
    /// When the user last changed it (milliseconds); the later edit wins a conflict.
    public var editedAt: Int64
    /// A local change is waiting to be sent.
    public var isPending: Bool
    /// The article's picture: a local file until it is uploaded, then the server's
    /// description of it (its bytes come with ``ReadingList/thumbnail(of:)``).
    public var thumbnail: Nimbus.Asset?

    public init(
        id: String, url: String, title: String, addedAt: Int64, editedAt: Int64, isPending: Bool = false,
        thumbnail: Nimbus.Asset? = nil
    ) {
        self.id = id
        self.url = url
        self.title = title
        self.addedAt = addedAt
        self.editedAt = editedAt
        self.isPending = isPending
        self.thumbnail = thumbnail
    }

    /// The bookmark a local record holds, or nil for another record type.
    public init?(_ record: LocalRecord) {
        typealias F = ReadingListSchema.BookmarkField
        guard record.recordType == ReadingListSchema.bookmarkType else { return nil }
        id = record.recordName
        url = record[F.url]?.stringValue ?? ""
        title = record[F.title]?.stringValue ?? ""
        addedAt = record[F.addedAt]?.timestampValue ?? 0
        editedAt = record[F.editedAt]?.timestampValue ?? 0
        isPending = record.isPending
        thumbnail = record[F.thumbnail].flatMap(Nimbus.Asset.init(fieldValue:))
    }

    var record: LocalRecord {
        typealias F = ReadingListSchema.BookmarkField
        var fields: [String: FieldValue] = [
            F.url: .string(url), F.title: .string(title), F.addedAt: .timestamp(addedAt),
            F.editedAt: .timestamp(editedAt),
        ]
        fields[F.thumbnail] = thumbnail?.fieldValue
        return LocalRecord(
            zoneName: ReadingListSchema.bookmarksZone, recordName: id, recordType: ReadingListSchema.bookmarkType,
            fields: fields)
    }

    /// The record name of an article: a stable hash of its URL (FNV-1a, 40 bits, hex).
    public static func id(for url: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in url.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        let text = String(hash & 0xFF_FFFF_FFFF, radix: 16)
        return String(repeating: "0", count: 10 - text.count) + text
    }
}

/// An article's reading history: a `History` record in the ReadingHistory zone, named like
/// the article's bookmark.
public struct ReadState: Sendable, Hashable, Identifiable {
    public var id: String
    public var url: String
    /// Reads on every device, added up across conflicts.
    public var readCount: Int64
    public var lastReadAt: Int64
    public var editedAt: Int64
    public var isPending: Bool

    public init?(_ record: LocalRecord) {
        typealias F = ReadingListSchema.HistoryField
        guard record.recordType == ReadingListSchema.historyType else { return nil }
        id = record.recordName
        url = record[F.url]?.stringValue ?? ""
        readCount = record[F.readCount]?.int64Value ?? 0
        lastReadAt = record[F.lastReadAt]?.timestampValue ?? 0
        editedAt = record[F.editedAt]?.timestampValue ?? 0
        isPending = record.isPending
    }
}
