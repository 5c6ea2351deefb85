import GRDB
import GRDBSQLite
import NimbusStore

/// One run of a cached GRDB statement bound and stepped through SQLite's C API: the writes
/// and lookups a `records/modify` makes per record, inside the writer's transaction.
///
/// GRDB's `execute(arguments:)` binds a literal of existentials through nested temporary
/// bindings that retain and release every value several times; per record that cost more
/// than SQLite's own insert (`nimbus-bench store-write`, docs/PERFORMANCE.md). Here a value
/// is bound in one C call (text copied by SQLite, `SQLITE_TRANSIENT`).
///
/// Only for statements that need none of GRDB's statement bookkeeping, inside a transaction
/// GRDB opened. GRDB's transaction observers hear of row changes only from statements GRDB
/// runs (it installs SQLite's update hook around each): these write and read `records`, which
/// no observer watches (``AccountTablesObserver`` watches the account tables; its commit hook
/// still fires, as GRDB commits). The statement is reset before and after, so GRDB finds it
/// as it left it.
struct DirectStatement {
    private let statement: Statement
    private var index: CInt = 0

    init(_ statement: Statement) {
        self.statement = statement
        // A statement GRDB last stepped to its end: back to the start, bindings kept until
        // every parameter is bound again below.
        sqlite3_reset(statement.sqliteStatement)
    }

    mutating func bind(_ value: String) {
        index += 1
        var value = value
        value.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { text in
                _ = sqlite3_bind_text(statement.sqliteStatement, index, text.baseAddress, CInt(text.count), Self.transient)
            }
        }
    }

    mutating func bind(_ value: String?) {
        guard let value else {
            index += 1
            sqlite3_bind_null(statement.sqliteStatement, index)
            return
        }
        bind(value)
    }

    mutating func bind(_ value: Int64) {
        index += 1
        sqlite3_bind_int64(statement.sqliteStatement, index, value)
    }

    mutating func bind(_ value: Bool) {
        bind(value ? 1 as Int64 : 0)
    }

    /// Steps the statement to its end (a write).
    func execute() throws {
        try rows { _ in }
    }

    /// Steps the statement, calling `body` with the statement positioned on each row.
    func rows(_ body: (SQLiteStatement) throws -> Void) throws {
        let sqlite = statement.sqliteStatement
        precondition(index == sqlite3_bind_parameter_count(sqlite), "every parameter is bound")
        defer {
            sqlite3_reset(sqlite)
            sqlite3_clear_bindings(sqlite)
        }
        while true {
            let code = sqlite3_step(sqlite)
            switch code {
            case SQLITE_DONE: return
            case SQLITE_ROW: try body(sqlite)
            default:
                let message = String(cString: sqlite3_errmsg(sqlite3_db_handle(sqlite)))
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
            }
        }
    }

    /// SQLite copies bound text before the call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}
