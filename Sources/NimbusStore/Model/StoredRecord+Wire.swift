import NimbusProtocol

/// A stored record in CloudKit's wire form, written straight to text.
///
/// A live record's response dictionary is
/// `{created, deleted, fields, modified, recordChangeTag, recordName, recordType, zoneID}` in
/// that (sorted) member order — the order ``JSON/serialized()`` writes — and a tombstone's is
/// `{deleted, recordName, zoneID}`. Both end with the zone, which only the server knows (how
/// the zone is named to the caller), so a record splits into parts an engine can write once,
/// when the record is saved, and reuse on every read:
///
/// - ``wireHead``: `{"created":{…},"deleted":false,"fields":` (a tombstone:
///   `{"deleted":true,"recordName":"…"`);
/// - ``fieldsJSON``, the stored fields as they are (none for a tombstone);
/// - ``wireTail``: `,"modified":{…},"recordChangeTag":"…","recordName":"…","recordType":"…"`
///   (empty for a tombstone);
/// - the *zone closing*, `,"zoneID":{…}}`, added by the reader.
extension StoredRecord {
    /// The record's first members, up to its fields (a tombstone: all its members but the zone).
    package var wireHead: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(160)
        writeHead(into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The members between the fields and the zone (empty for a tombstone).
    package var wireTail: String {
        guard !deleted else { return "" }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(200)
        writeTail(into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends ``wireHead``.
    private func writeHead(into bytes: inout [UInt8]) {
        if deleted {
            JSON.writeRaw(#"{"deleted":true,"recordName":"#, into: &bytes)
            JSON.writeString(recordName, into: &bytes)
        } else {
            JSON.writeRaw(#"{"created":"#, into: &bytes)
            Self.writeStamp(created, into: &bytes)
            JSON.writeRaw(#","deleted":false,"fields":"#, into: &bytes)
        }
    }

    /// Appends ``wireTail`` (nothing for a tombstone).
    private func writeTail(into bytes: inout [UInt8]) {
        guard !deleted else { return }
        JSON.writeRaw(#","modified":"#, into: &bytes)
        Self.writeStamp(modified, into: &bytes)
        JSON.writeRaw(#","recordChangeTag":"#, into: &bytes)
        JSON.writeString(changeTag, into: &bytes)
        JSON.writeRaw(#","recordName":"#, into: &bytes)
        JSON.writeString(recordName, into: &bytes)
        JSON.writeRaw(#","recordType":"#, into: &bytes)
        JSON.writeString(recordType, into: &bytes)
    }

    /// Appends the record's response dictionary, closed by `zoneClosing` (`,"zoneID":{…}}`).
    package func appendWritten(closedBy zoneClosing: String, to text: inout String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(fieldsJSON.utf8.count + 360 + zoneClosing.utf8.count)
        writeWritten(closedBy: zoneClosing, into: &bytes)
        text.append(String(decoding: bytes, as: UTF8.self))
    }

    /// Appends the record's response dictionary, closed by `zoneClosing`, as UTF-8.
    package func writeWritten(closedBy zoneClosing: String, into bytes: inout [UInt8]) {
        writeHead(into: &bytes)
        if !deleted {
            Self.writeText(servableFieldsJSON, into: &bytes)
            writeTail(into: &bytes)
        }
        Self.writeText(zoneClosing, into: &bytes)
    }

    /// Appends a text's UTF-8 in one copy (`append(contentsOf: text.utf8)` goes byte by byte).
    private static func writeText(_ text: String, into bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// ``fieldsJSON`` as it may go out: as stored, unless it may hold a value that does not
    /// decode, which is left out (see ``fields()``). The canonical writer never writes
    /// `null` (a non-finite double is written as a string, which the door refuses), so only
    /// fields texts containing the bytes `null` — a value an older release let in, or a
    /// string that happens to contain the word — are decoded and written again.
    package var servableFieldsJSON: String {
        guard Self.mayHoldNull(fieldsJSON) else { return fieldsJSON }
        return Record.fieldsJSONText(fields())
    }

    /// Whether the text contains the bytes `null` (searched as ``FieldsText`` searches: every
    /// record of every page a server reads is looked at).
    package static func mayHoldNull(_ text: String) -> Bool {
        FieldsText.contains(Self.nullBytes, in: text)
    }

    private static let nullBytes: [UInt8] = Array("null".utf8)

    /// Records as a JSON array of response dictionaries, each closed by `zoneClosing`.
    package static func writtenArray(_ records: [StoredRecord], closedBy zoneClosing: String) -> String {
        String(decoding: writtenBytes(records, closedBy: zoneClosing), as: UTF8.self)
    }

    /// ``writtenArray(_:closedBy:)`` as UTF-8, written straight into one buffer.
    package static func writtenBytes(_ records: [StoredRecord], closedBy zoneClosing: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(records.reduce(2) { $0 + $1.fieldsJSON.utf8.count + 360 + zoneClosing.utf8.count })
        bytes.append(UInt8(ascii: "["))
        for (offset, record) in records.enumerated() {
            if offset > 0 { bytes.append(UInt8(ascii: ",")) }
            record.writeWritten(closedBy: zoneClosing, into: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
        return bytes
    }

    /// `{deviceID?, timestamp, userRecordName?}`, as the object form serializes a stamp.
    package static func writeStamp(_ stamp: RecordStamp, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        if let device = stamp.deviceID {
            JSON.writeRaw(#""deviceID":"#, into: &out)
            JSON.writeString(device, into: &out)
            out.append(UInt8(ascii: ","))
        }
        JSON.writeRaw(#""timestamp":"#, into: &out)
        JSON.writeInteger(stamp.timestamp, into: &out)
        if let user = stamp.userRecordName {
            JSON.writeRaw(#","userRecordName":"#, into: &out)
            JSON.writeString(user, into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}

/// A change feed page whose records are already written for the wire, as one JSON array
/// (see ``RecordStore/writtenRecordChanges(zone:since:limit:zoneClosing:in:)``).
public struct WrittenRecordChangesPage: Sendable, Equatable {
    /// `[…]` in UTF-8: the records ``RecordChangesPage/records`` holds, in the same order,
    /// each written as ``StoredRecord/appendWritten(closedBy:to:)`` writes it.
    public var recordsJSON: [UInt8]
    public var syncToken: String
    public var moreComing: Bool
    /// How many records ``recordsJSON`` holds (the server's `/metrics` counts records read).
    public var recordCount: Int

    public init(recordsJSON: [UInt8], syncToken: String, moreComing: Bool, recordCount: Int) {
        self.recordsJSON = recordsJSON
        self.syncToken = syncToken
        self.moreComing = moreComing
        self.recordCount = recordCount
    }
}
