import Foundation
import GRDB
import GRDBSQLite

/// A cached GRDB statement whose values are bound through SQLite's C API: the writes and
/// lookups that run once per record, on the server (`records/modify`) and in a device's
/// store (each fetched record's copy).
///
/// GRDB's `execute(arguments:)` builds a literal of existentials and binds it through nested
/// temporary bindings that retain and release every value several times; per record that
/// cost more than SQLite's own insert (`nimbus-bench store-write`, and a tenth of the writer's
/// time in a million-record first sync). Here each value is bound in one C call (SQLite copies
/// text and blobs before the call returns, `SQLITE_TRANSIENT`).
///
/// Two ways to run it, once every parameter is bound:
/// - ``execute()``: GRDB steps the statement, so its transaction observers
///   (`ValueObservation`, `DatabaseRegionObservation`, an app's `TransactionObserver`) hear of
///   the rows as of any other write;
/// - ``rows(_:)`` and ``executeUnobserved()``: stepped here, for tables no observer watches,
///   inside a transaction GRDB opened (its commit hooks still fire, as GRDB commits).
///
/// GRDB keeps C-bound values when it runs a statement whose arguments it holds as set and
/// bound: `init` marks them so (empty), and no other code runs the same cached statement
/// with arguments of its own.
package struct BoundStatement {
    private let statement: Statement
    private var index: CInt = 0

    package init(_ statement: Statement) {
        self.statement = statement
        // Resets the statement, clears its bindings, and tells GRDB the (empty) arguments are
        // bound: its `execute()` then only resets and steps.
        statement.setUncheckedArguments(StatementArguments())
    }

    package mutating func bind(_ value: String) {
        var value = value
        value.withUTF8 { bind(text: $0) }
    }

    package mutating func bind(_ value: String?) {
        guard let value else { return bindNull() }
        bind(value)
    }

    package mutating func bind(_ value: Int64) {
        index += 1
        sqlite3_bind_int64(statement.sqliteStatement, index, value)
    }

    package mutating func bind(_ value: Bool) {
        bind(value ? 1 as Int64 : 0)
    }

    /// UTF-8 text.
    package mutating func bind(text bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { bind(text: $0) }
    }

    package mutating func bind(blob bytes: [UInt8]) {
        index += 1
        let index = index
        bytes.withUnsafeBytes { bytes in
            if let address = bytes.baseAddress {
                _ = sqlite3_bind_blob(statement.sqliteStatement, index, address, CInt(bytes.count), Self.transient)
            } else {
                // An empty blob (a nil pointer would bind NULL).
                sqlite3_bind_zeroblob(statement.sqliteStatement, index, 0)
            }
        }
    }

    /// Runs the statement through GRDB (its observers hear of the rows).
    package func execute() throws {
        precondition(allBound, "every parameter is bound")
        try statement.execute()
    }

    /// Steps the statement to its end (a write no observer watches).
    package func executeUnobserved() throws {
        try rows { _ in }
    }

    /// Steps the statement, calling `body` with the statement positioned on each row.
    package func rows(_ body: (SQLiteStatement) throws -> Void) throws {
        let sqlite = statement.sqliteStatement
        precondition(allBound, "every parameter is bound")
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

    private var allBound: Bool { index == sqlite3_bind_parameter_count(statement.sqliteStatement) }

    private mutating func bind(text bytes: UnsafeBufferPointer<UInt8>) {
        index += 1
        let index = index
        bytes.withMemoryRebound(to: CChar.self) { text in
            if let address = text.baseAddress {
                _ = sqlite3_bind_text(statement.sqliteStatement, index, address, CInt(text.count), Self.transient)
            } else {
                // An empty string binds '' (a nil pointer would bind NULL).
                _ = sqlite3_bind_text(statement.sqliteStatement, index, "", 0, Self.transient)
            }
        }
    }

    private mutating func bindNull() {
        index += 1
        sqlite3_bind_null(statement.sqliteStatement, index)
    }

    /// SQLite copies bound text before the call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}
