import Foundation
import GRDB
import GRDBSQLite

/// A cached GRDB statement whose values are bound through SQLite's C API, then run by GRDB:
/// the store's one write per fetched record (``StoreTransaction``'s `putCopy`).
///
/// GRDB's `execute(arguments:)` builds a literal of existentials and binds it through nested
/// temporary bindings that retain and release every value several times; over a
/// million-record first sync that was about a tenth of the writer's time. Here each value is
/// bound in one C call (SQLite copies text and blobs before the call returns,
/// `SQLITE_TRANSIENT`), and GRDB's own `execute()` steps the statement, so its transaction
/// observers (`ValueObservation`, `DatabaseRegionObservation`) see the write as any other.
///
/// GRDB keeps C-bound values when it runs a statement whose arguments it holds as set and
/// bound: `init` marks them so (empty), and no other code runs the same cached statement
/// with arguments of its own.
struct BoundStatement {
    private let statement: Statement
    private var index: CInt = 0

    init(_ statement: Statement) {
        self.statement = statement
        // Resets the statement, clears its bindings, and tells GRDB the (empty) arguments are
        // bound: its `execute()` then only resets and steps.
        statement.setUncheckedArguments(StatementArguments())
    }

    mutating func bind(_ value: String) {
        var value = value
        value.withUTF8 { bind(text: $0) }
    }

    mutating func bind(_ value: String?) {
        guard let value else { return bindNull() }
        bind(value)
    }

    /// UTF-8 text.
    mutating func bind(text bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { bind(text: $0) }
    }

    mutating func bind(blob bytes: [UInt8]) {
        bytes.withUnsafeBytes { bind(blob: $0) }
    }

    private mutating func bind(blob bytes: UnsafeRawBufferPointer) {
        index += 1
        if let address = bytes.baseAddress {
            _ = sqlite3_bind_blob(statement.sqliteStatement, index, address, CInt(bytes.count), Self.transient)
        } else {
            // An empty blob (a nil pointer would bind NULL).
            sqlite3_bind_zeroblob(statement.sqliteStatement, index, 0)
        }
    }

    mutating func bind(_ value: Bool) {
        index += 1
        sqlite3_bind_int64(statement.sqliteStatement, index, value ? 1 : 0)
    }

    /// Runs the statement through GRDB, once every parameter is bound.
    func execute() throws {
        precondition(index == sqlite3_bind_parameter_count(statement.sqliteStatement), "every parameter is bound")
        try statement.execute()
    }

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
