import Foundation
import GRDB
import NimbusSync

/// The library's own tables in the engine's local store: what the last sync left on disk (the
/// local name map and the scanner's last known tree), the contents sent and not yet confirmed
/// (to keep a version a conflict took over), and the files the app asked to download.
enum DocumentsState {
    static func create(_ db: GRDB.Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS nimbus_documents_known (
                    record TEXT PRIMARY KEY, path TEXT NOT NULL, is_folder INTEGER NOT NULL,
                    inode INTEGER NOT NULL, size INTEGER NOT NULL, modified INTEGER NOT NULL, sha256 TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS nimbus_documents_sent (
                    record TEXT PRIMARY KEY, sha256 TEXT NOT NULL, staged TEXT NOT NULL, name TEXT NOT NULL,
                    folder TEXT, modified INTEGER NOT NULL);
                CREATE TABLE IF NOT EXISTS nimbus_documents_wanted (record TEXT PRIMARY KEY);
                CREATE TABLE IF NOT EXISTS nimbus_documents_on_server (record TEXT PRIMARY KEY);
                """)
    }

    // MARK: - Records seen on the server

    /// Notes the records the server has (a copy with a change tag): only such a record's
    /// disappearance is a deletion (one the server refused was never there).
    static func noteOnServer(_ db: GRDB.Database, zone: String) throws {
        try db.execute(
            sql: """
                INSERT OR IGNORE INTO nimbus_documents_on_server (record)
                SELECT name FROM nimbus_records WHERE zone = ? AND tag IS NOT NULL
                """,
            arguments: [zone])
    }

    static func onServer(_ db: GRDB.Database) throws -> Set<String> {
        Set(try String.fetchAll(db, sql: "SELECT record FROM nimbus_documents_on_server"))
    }

    static func forgetOnServer(_ recordName: String, _ db: GRDB.Database) throws {
        try db.execute(sql: "DELETE FROM nimbus_documents_on_server WHERE record = ?", arguments: [recordName])
    }

    // MARK: - Known items

    static func known(_ db: GRDB.Database) throws -> [KnownItem] {
        try Row.fetchAll(db, sql: "SELECT * FROM nimbus_documents_known").map { row in
            let path: String = row["path"]
            return KnownItem(
                recordName: row["record"],
                path: DocumentPath(checked: path.isEmpty ? [] : path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)),
                entry: DiskEntry(
                    isFolder: row["is_folder"], inode: UInt64(bitPattern: row["inode"]), size: row["size"],
                    modified: row["modified"]),
                sha256: row["sha256"])
        }
    }

    static func setKnown(_ item: KnownItem, _ db: GRDB.Database) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO nimbus_documents_known (record, path, is_folder, inode, size, modified, sha256) VALUES (?, ?, ?, ?, ?, ?, ?)",
            arguments: [
                item.recordName, item.path.description, item.entry.isFolder, Int64(bitPattern: item.entry.inode),
                item.entry.size, item.entry.modified, item.sha256,
            ])
    }

    static func forgetKnown(_ recordName: String, _ db: GRDB.Database) throws {
        try db.execute(sql: "DELETE FROM nimbus_documents_known WHERE record = ?", arguments: [recordName])
    }

    // MARK: - Sent contents

    /// A content this device saved, kept (with its staged copy) until the server's record is
    /// seen to hold it, or a conflict took it over and it became a conflict version.
    struct Sent: Sendable {
        var recordName: String
        var sha256: String
        var staged: String
        var name: String
        var folder: String?
        var modified: Int64
    }

    static func sent(_ db: GRDB.Database) throws -> [Sent] {
        try Row.fetchAll(db, sql: "SELECT * FROM nimbus_documents_sent").map {
            Sent(recordName: $0["record"], sha256: $0["sha256"], staged: $0["staged"], name: $0["name"], folder: $0["folder"], modified: $0["modified"])
        }
    }

    static func setSent(_ sent: Sent, _ db: GRDB.Database) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO nimbus_documents_sent (record, sha256, staged, name, folder, modified) VALUES (?, ?, ?, ?, ?, ?)",
            arguments: [sent.recordName, sent.sha256, sent.staged, sent.name, sent.folder, sent.modified])
    }

    /// Forgets a content of a record this device deleted, and its staged copy: a deletion
    /// by the user is no edit to keep.
    static func dropSent(_ recordName: String, _ db: GRDB.Database) throws {
        if let staged = try String.fetchOne(db, sql: "SELECT staged FROM nimbus_documents_sent WHERE record = ?", arguments: [recordName]) {
            try? FileManager.default.removeItem(atPath: staged)
        }
        try forgetSent(recordName, db)
    }

    static func forgetSent(_ recordName: String, _ db: GRDB.Database) throws {
        try db.execute(sql: "DELETE FROM nimbus_documents_sent WHERE record = ?", arguments: [recordName])
    }

    // MARK: - Wanted downloads

    static func wanted(_ db: GRDB.Database) throws -> Set<String> {
        Set(try String.fetchAll(db, sql: "SELECT record FROM nimbus_documents_wanted"))
    }

    static func want(_ recordName: String, _ db: GRDB.Database) throws {
        try db.execute(sql: "INSERT OR IGNORE INTO nimbus_documents_wanted (record) VALUES (?)", arguments: [recordName])
    }
}
