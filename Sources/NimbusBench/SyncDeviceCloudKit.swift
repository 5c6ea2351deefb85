import Foundation
import GRDB
import NIOConcurrencyHelpers
import NimbusCloudKit

/// The new device of `nimbus-bench sync --engine cloudkit`: an app on CloudKit's own API
/// (`NimbusCloudKit`'s `CKSyncEngine`) that keeps what it fetches in its own SQLite table, as
/// such apps do (WAL, a pool of readers: the app's reads do not wait for the page being written). Each page is written in one transaction; the engine's state goes into the same
/// database at each state update, so a killed app resumes from the last state it saved.
final class CloudKitBenchApp: CKSyncEngineDelegate {
    let database: DatabasePool
    /// Records fetched by this run, and how to report them.
    private let fetched = NIOLockedValueBox(0)
    private let onPage: @Sendable (_ records: Int) -> Void

    init(path: String, onPage: @escaping @Sendable (Int) -> Void) throws {
        database = try DatabasePool(path: path)
        self.onPage = onPage
        try database.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS bookmarks (name TEXT PRIMARY KEY, tag TEXT, url TEXT, title TEXT) WITHOUT ROWID;
                    CREATE TABLE IF NOT EXISTS engine_state (id INTEGER PRIMARY KEY CHECK (id = 1), state BLOB NOT NULL);
                    """)
        }
    }

    /// The state the engine saved last, for its next launch.
    func savedState() throws -> CKSyncEngine.State.Serialization? {
        try database.read { db in
            try Data.fetchOne(db, sql: "SELECT state FROM engine_state WHERE id = 1").map {
                try JSONDecoder().decode(CKSyncEngine.State.Serialization.self, from: $0)
            }
        }
    }

    var count: Int { (try? database.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM bookmarks") }) ?? 0 }
    var recordsFetched: Int { fetched.withLockedValue { $0 } }

    /// One bookmark by name (what the app's screens read while the sync runs).
    func bookmark(_ name: String) throws -> String? {
        try database.read { db in
            try String.fetchOne(db, sql: "SELECT title FROM bookmarks WHERE name = ?", arguments: [name])
        }
    }

    func handleEvent(_ event: CKSyncEngine.Event, syncEngine: CKSyncEngine) async {
        switch event {
        case .fetchedRecordZoneChanges(let changes):
            _ = try? await database.write { db in
                let statement = try db.cachedStatement(
                    sql: "INSERT OR REPLACE INTO bookmarks (name, tag, url, title) VALUES (?, ?, ?, ?)")
                for modification in changes.modifications {
                    let record = modification.record
                    let (url, title): (String?, String?) = (record["url"], record["title"])
                    try statement.execute(arguments: [record.recordID.recordName, record.recordChangeTag, url, title])
                }
                for deletion in changes.deletions {
                    try db.execute(sql: "DELETE FROM bookmarks WHERE name = ?", arguments: [deletion.recordID.recordName])
                }
            }
            let total = fetched.withLockedValue {
                $0 += changes.modifications.count + changes.deletions.count
                return $0
            }
            onPage(total)
        case .stateUpdate(let update):
            let data = try? JSONEncoder().encode(update.stateSerialization)
            _ = try? await database.write { db in
                try db.execute(sql: "INSERT OR REPLACE INTO engine_state (id, state) VALUES (1, ?)", arguments: [data])
            }
        default:
            break
        }
    }

    func nextRecordZoneChangeBatch(
        _ context: CKSyncEngine.SendChangesContext, syncEngine: CKSyncEngine
    ) async -> CKSyncEngine.RecordZoneChangeBatch? {
        nil
    }
}
