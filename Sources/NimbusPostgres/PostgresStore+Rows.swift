import Foundation
import NIOCore
import NimbusProtocol
import NimbusStore
import PostgresNIO

extension PostgresStore {
    /// The columns of a record row, in the order ``ColumnReader/record()`` reads them.
    static let recordColumns =
        "name, type, fields, created_at, created_by, created_device, modified_at, modified_by, modified_device, version, created_version, deleted"

    /// ``recordColumns`` of a table aliased `r`.
    static let recordColumnsR = qualified(recordColumns, by: "r")
    /// ``zoneColumns`` of a table aliased `z`.
    static let zoneColumnsZ = qualified(zoneColumns, by: "z")

    /// A column list with each column qualified by a table alias (`r.name, r.type, …`).
    static func qualified(_ columns: String, by alias: String) -> String {
        columns.split(separator: ",").map { "\(alias).\($0.trimmingCharacters(in: .whitespaces))" }
            .joined(separator: ", ")
    }

    /// The columns of a zone row, in the order ``ColumnReader/zone()`` reads them.
    static let zoneColumns = "name, incarnation, change_version, meta_version, horizon, deleted"
}

/// Reads a row's columns left to right, decoding each as the type asked.
struct ColumnReader {
    private var cells: PostgresRow.Iterator

    init(_ row: PostgresRow) {
        self.cells = row.makeIterator()
    }

    /// The next column.
    mutating func next<Value: PostgresDecodable>(_: Value.Type = Value.self) throws -> Value {
        guard let cell = cells.next() else {
            throw PostgresStoreError(.corruptRow, "a row has fewer columns than nimbus reads")
        }
        return try cell.decode(Value.self)
    }

    /// The next column's bytes as PostgreSQL sent them (`nil` for NULL), not decoded.
    mutating func nextBytes() -> ByteBuffer? {
        cells.next()?.bytes
    }

    mutating func skip(_ count: Int) {
        for _ in 0..<count { _ = cells.next() }
    }

    /// A record from ``PostgresStore/recordColumns``.
    mutating func record() throws -> StoredRecord {
        try record(named: try next())
    }

    /// The rest of a record from ``PostgresStore/recordColumns``, its name read already.
    mutating func record(named name: String) throws -> StoredRecord {
        StoredRecord(
            recordName: name, recordType: try next(), fieldsJSON: try next(),
            created: RecordStamp(timestamp: try next(), userRecordName: try next(), deviceID: try next()),
            modified: RecordStamp(timestamp: try next(), userRecordName: try next(), deviceID: try next()),
            version: try next(), createdVersion: try next(), deleted: try next())
    }

    /// A record from ``PostgresStore/recordColumns`` of an outer join: `nil` when the join
    /// found no record.
    mutating func optionalRecord() throws -> StoredRecord? {
        try unlessNull(columns: 12) { try $0.record() }
    }

    /// A zone from ``PostgresStore/zoneColumns``.
    mutating func zone() throws -> ZoneState {
        ZoneState(
            zoneName: try next(), incarnation: try next(), changeVersion: try next(), metaVersion: try next(),
            horizon: try next(), deleted: try next())
    }

    /// A zone from ``PostgresStore/zoneColumns`` of an outer join, `nil` when absent.
    mutating func optionalZone() throws -> ZoneState? {
        try unlessNull(columns: 6) { try $0.zone() }
    }

    /// Reads `count` columns with `read`, or skips them and returns `nil` when the first is
    /// NULL (an outer join that found no row).
    mutating func unlessNull<Value>(columns count: Int, _ read: (inout ColumnReader) throws -> Value) throws -> Value? {
        var probe = self
        guard try probe.next(String?.self) != nil else {
            skip(count)
            return nil
        }
        return try read(&self)
    }
}

extension PostgresRow {
    /// The record in the row's first columns (``PostgresStore/recordColumns``) of an outer
    /// join, `nil` when the join found none; the columns after it are not read. The change
    /// feed reads 200 records a page this way.
    func leadingRecord() throws -> StoredRecord? {
        var columns = ColumnReader(self)
        guard let name = try columns.next(String?.self) else { return nil }
        return try columns.record(named: name)
    }
}

/// A one-dimensional array parameter whose elements may be NULL (`text[]`, `int8[]`, …),
/// for `unnest` batch writes of nullable columns; PostgresNIO's own arrays have no NULLs.
struct NullableArray<Element: PostgresArrayEncodable & PostgresNonThrowingEncodable>: PostgresNonThrowingEncodable {
    var values: [Element?]

    init(_ values: [Element?]) {
        self.values = values
    }

    static var psqlType: PostgresDataType { Element.psqlArrayType }
    static var psqlFormat: PostgresFormat { .binary }

    /// PostgreSQL's binary array format: dimensions, has-NULLs flag, element type, then
    /// (for a non-empty array) its length and lower bound, then each element length-prefixed
    /// (length -1 for NULL).
    func encode<JSONEncoder: PostgresJSONEncoder>(
        into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
    ) {
        buffer.writeInteger(values.isEmpty ? 0 : 1, as: Int32.self)
        buffer.writeInteger(values.contains { $0 == nil } ? 1 : 0, as: Int32.self)
        buffer.writeInteger(Element.psqlType.rawValue)
        guard !values.isEmpty else { return }
        buffer.writeInteger(Int32(values.count), as: Int32.self)
        buffer.writeInteger(1, as: Int32.self)
        for value in values {
            guard let value else {
                buffer.writeInteger(-1, as: Int32.self)
                continue
            }
            let lengthIndex = buffer.writerIndex
            buffer.writeInteger(0, as: Int32.self)
            let start = buffer.writerIndex
            value.encode(into: &buffer, context: context)
            buffer.setInteger(Int32(buffer.writerIndex - start), at: lengthIndex, as: Int32.self)
        }
    }
}

extension NullableArray: Sendable where Element: Sendable {}
