import Foundation

/// Renders the Reading List as text, for the command line and the `watch` view.
public enum ListView {
    /// The list: one line per bookmark with its ID (what `remove` and `read` take), title,
    /// URL and read count; `*` marks a change not sent yet.
    public static func render(_ snapshot: ReadingListSnapshot, width: Int = 100) -> [String] {
        let count = snapshot.bookmarks.count
        var header = "Reading List: \(count) bookmark\(count == 1 ? "" : "s")"
        if snapshot.pending > 0 { header += " (\(snapshot.pending) change\(snapshot.pending == 1 ? "" : "s") not sent yet)" }
        var lines = [header]
        if snapshot.bookmarks.isEmpty {
            lines.append("  (empty: `reading-list add <url>` bookmarks an article)")
        }
        let titleWidth = max(12, min(40, (width - 30) / 2))
        for bookmark in snapshot.bookmarks {
            let reads = snapshot.readState(bookmark.id)?.readCount ?? 0
            let readText = reads == 0 ? "unread" : "read \(reads)×"
            let marker = bookmark.isPending ? "*" : " "
            lines.append(
                "\(marker) \(bookmark.id)  \(pad(bookmark.title, titleWidth))  \(pad(readText, 8))  \(bookmark.url)")
        }
        return lines
    }

    static func pad(_ text: String, _ width: Int) -> String {
        if text.count > width { return String(text.prefix(width - 1)) + "…" }
        return text + String(repeating: " ", count: width - text.count)
    }

    /// `HH:mm:ss.SSS` of a time in milliseconds since the epoch, in local time.
    public static func clock(_ millis: Int64) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss.SSS"
        return formatter.string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
    }
}
