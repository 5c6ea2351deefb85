import Foundation

/// A change feed answer (`records/changes`) read straight into ``Record``s, without a JSON
/// tree of the records: a sync client reads hundreds of thousands of them, and building,
/// reading and freeing the tree (a dictionary per record, per field and per stamp) cost
/// more than decoding the records themselves.
package struct ChangeFeedPage: Sendable {
    /// The answer's members other than `records` (`syncToken`, `moreComing`, `zoneID`, …).
    package var members: [String: JSON]
    /// The records of `records`, in order: every one a live record.
    package var records: [Record]

    /// Reads a change feed answer whose `records` are all live records that decode as
    /// ``Record/init(wire:)`` decodes them (any member order, whitespace and escapes).
    ///
    /// Returns `nil` for anything else — a document that is not well-formed, a deletion, a
    /// per-record error, a value ``Record/init(wire:)`` refuses, a shape this reader does not
    /// cover: the caller then reads the answer the general way (``JSON/parse(_:)`` and the
    /// wire decoders), which also reports what is wrong. When it returns a page, the page
    /// holds what the general way would have read.
    package static func parse(_ bytes: some Collection<UInt8>) -> ChangeFeedPage? {
        let direct = bytes.withContiguousStorageIfAvailable { buffer -> ChangeFeedPage? in
            var parser = JSONParser(bytes: buffer)
            return try? parser.parseChangeFeedPage()
        }
        if let direct { return direct }
        return Array(bytes).withUnsafeBufferPointer { buffer -> ChangeFeedPage? in
            var parser = JSONParser(bytes: buffer)
            return try? parser.parseChangeFeedPage()
        }
    }
}

extension JSONParser {
    /// The document as a ``ChangeFeedPage``; `nil` (or a syntax error) when it is not one
    /// this reader covers.
    mutating func parseChangeFeedPage() throws(JSONSyntaxError) -> ChangeFeedPage? {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return nil }
        var members: [String: JSON] = [:]
        var records: [Record]?
        let complete = try parseMembers { parser, key throws(JSONSyntaxError) -> Bool in
            guard key == "records" else {
                members[key] = try parser.parseValue()
                return true
            }
            // A second `records`, or one that is not an array: the general way decides.
            guard records == nil, parser.index < parser.bytes.count, parser.bytes[parser.index] == UInt8(ascii: "[")
            else { return false }
            records = try parser.parseFeedRecords()
            return records != nil
        }
        guard complete else { return nil }
        skipWhitespace()
        guard index == bytes.count else { return nil }
        return ChangeFeedPage(members: members, records: records ?? [])
    }

    /// Reads the object at `index` member by member: `member` reads each value (the parser
    /// is at its first byte) and returns false to give up. Returns false if any did.
    private mutating func parseMembers(
        _ member: (inout JSONParser, String) throws(JSONSyntaxError) -> Bool
    ) throws(JSONSyntaxError) -> Bool {
        try enter()
        defer { depth -= 1 }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return true
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a quoted member name") }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input") }
            guard try member(&self, key) else { return false }
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input in an object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return true
            }
            throw fail("expected ',' or '}'")
        }
    }

    /// The `records` array; `nil` if an element is not a live record that decodes.
    private mutating func parseFeedRecords() throws(JSONSyntaxError) -> [Record]? {
        try enter()
        defer { depth -= 1 }
        index += 1
        skipWhitespace()
        var records: [Record] = []
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return records
        }
        while true {
            skipWhitespace()
            guard let record = try parseFeedRecord() else { return nil }
            records.append(record)
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input in an array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return records
            }
            throw fail("expected ',' or ']'")
        }
    }

    /// One element of `records` as ``Record/init(wire:)`` reads it; `nil` if it is not an
    /// object, is deleted, carries a `serverErrorCode` or does not decode.
    private mutating func parseFeedRecord() throws(JSONSyntaxError) -> Record? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return nil }
        var recordName: String?
        var recordType: String?
        var recordChangeTag: String?
        var fields: [String: FieldValue] = [:]
        var created: RecordStamp?
        var modified: RecordStamp?
        var zoneID: ZoneID?
        let complete = try parseMembers { parser, key throws(JSONSyntaxError) -> Bool in
            switch key {
            case "recordName": return try parser.parseOptionalString(into: &recordName)
            case "recordType": return try parser.parseOptionalString(into: &recordType)
            case "recordChangeTag": return try parser.parseOptionalString(into: &recordChangeTag)
            case "fields":
                fields = [:]
                if parser.bytes[parser.index] == UInt8(ascii: "{") {
                    fields.reserveCapacity(8)
                    return try parser.parseMembers { parser, name throws(JSONSyntaxError) -> Bool in
                        guard !name.isEmpty, let value = try parser.parseFieldValue() else { return false }
                        fields[name] = value
                        return true
                    }
                }
                // `null` is no fields; anything else is refused.
                return try parser.parseValue() == .null
            case "created": return try parser.parseStamp(into: &created)
            case "modified": return try parser.parseStamp(into: &modified)
            case "deleted":
                // Deletions take the general way; `false` or null is a live record.
                let value = try parser.parseValue()
                return value == .null || value.bool == false
            case "zoneID": return try parser.parseZoneID(into: &zoneID)
            case "serverErrorCode":
                return false
            case "parent", "share", "participants", "publicPermission", "shortGUID", "owner", "currentUserParticipant":
                // Sharing members (docs/SHARING.md), which ``Record`` does not hold: the
                // general way gives the SDK the record's JSON to read them from.
                return try parser.parseValue() == .null
            default:
                _ = try parser.parseValue()
                return true
            }
        }
        guard complete else { return nil }
        return Record(
            recordName: recordName ?? "", recordType: recordType ?? "", recordChangeTag: recordChangeTag, fields: fields,
            created: created, modified: modified, deleted: false, zoneID: zoneID)
    }

    /// A string member as ``WireReader/optionalString(_:)`` reads it (null is absent).
    private mutating func parseOptionalString(into target: inout String?) throws(JSONSyntaxError) -> Bool {
        switch try parseValue() {
        case .null: target = nil
        case .string(let text): target = text
        default: return false
        }
        return true
    }

    /// A string member that mostly repeats the one before it of its kind (a page's records
    /// are mostly by one user, from one device): when its bytes are those of `previous`,
    /// `previous` itself is taken (no new string is made); otherwise it is read as
    /// ``parseOptionalString(into:)`` reads it and kept as the next `previous` (the parser's
    /// `previousStampDevice` or `previousStampUser`).
    ///
    /// `previous` is only ever a string whose bytes need no escape in JSON, so equal bytes
    /// followed by the closing quote are exactly that string.
    private mutating func parseRepeatingString(into target: inout String?, device: Bool) throws(JSONSyntaxError) -> Bool {
        if var cached = device ? previousStampDevice : previousStampUser, bytes[index] == UInt8(ascii: "\"") {
            let start = index + 1
            let matched = cached.withUTF8 { text -> Bool in
                let end = start + text.count
                guard let textStart = text.baseAddress, end < bytes.count, bytes[end] == UInt8(ascii: "\"") else { return false }
                return memcmp(textStart, bytes.baseAddress! + start, text.count) == 0
            }
            if matched {
                index = start + cached.utf8.count + 1
                target = cached
                return true
            }
        }
        guard try parseOptionalString(into: &target) else { return false }
        if let text = target, !text.utf8.isEmpty,
            text.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") })
        {
            if device { previousStampDevice = text } else { previousStampUser = text }
        }
        return true
    }

    /// A `zoneID` as ``ZoneID/init(wire:)`` reads it (null is absent).
    private mutating func parseZoneID(into target: inout ZoneID?) throws(JSONSyntaxError) -> Bool {
        guard bytes[index] == UInt8(ascii: "{") else {
            guard try parseValue() == .null else { return false }
            target = nil
            return true
        }
        var zoneName: String?
        var ownerRecordName: String?
        var ownerName: String?
        let complete = try parseMembers { parser, key throws(JSONSyntaxError) -> Bool in
            switch key {
            case "zoneName": return try parser.parseOptionalString(into: &zoneName)
            case "ownerRecordName": return try parser.parseOptionalString(into: &ownerRecordName)
            case "ownerName": return try parser.parseOptionalString(into: &ownerName)
            default:
                _ = try parser.parseValue()
                return true
            }
        }
        guard complete, let zoneName, !zoneName.isEmpty else { return false }
        target = ZoneID(zoneName: zoneName, ownerRecordName: ownerRecordName ?? ownerName)
        return true
    }

    /// A `created` or `modified` stamp as `RecordStamp(wire:)` reads it.
    private mutating func parseStamp(into target: inout RecordStamp?) throws(JSONSyntaxError) -> Bool {
        guard bytes[index] == UInt8(ascii: "{") else {
            guard try parseValue() == .null else { return false }
            target = nil
            return true
        }
        var timestamp: Int64?
        var user: String?
        var device: String?
        let complete = try parseMembers { parser, key throws(JSONSyntaxError) -> Bool in
            switch key {
            case "timestamp":
                let value = try parser.parseValue()
                if value == .null {
                    timestamp = nil
                    return true
                }
                timestamp = value.int64
                return timestamp != nil
            case "userRecordName": return try parser.parseRepeatingString(into: &user, device: false)
            case "deviceID": return try parser.parseRepeatingString(into: &device, device: true)
            default:
                _ = try parser.parseValue()
                return true
            }
        }
        guard complete else { return false }
        target = RecordStamp(timestamp: timestamp ?? 0, userRecordName: user, deviceID: device)
        return true
    }

    /// A field dictionary `{value, type}` as ``FieldValue/init(wire:)`` reads it; `nil` if it
    /// does not decode.
    private mutating func parseFieldValue() throws(JSONSyntaxError) -> FieldValue? {
        guard bytes[index] == UInt8(ascii: "{") else {
            // A bare value: its type is inferred.
            return try? FieldValue(wire: WireReader(parseValue()))
        }
        var value: JSON?
        var type: JSON?
        var fraction: JSON?
        let complete = try parseMembers { parser, key throws(JSONSyntaxError) -> Bool in
            switch key {
            case "value": value = try parser.parseValue()
            case "type": type = try parser.parseValue()
            case FieldValue.fractionKey: fraction = try parser.parseValue()
            default: _ = try parser.parseValue()
            }
            return true
        }
        // Without `value` the object itself is the value (a reference, a location): the
        // general way reads those.
        guard complete, let value else { return nil }
        switch type {
        case nil, .null?:
            guard fraction == nil else { return nil }
            return try? FieldValue.inferred(from: WireReader(value))
        case .string(let name)?:
            guard let fieldType = FieldType(rawValue: name) else { return nil }
            return try? FieldValue.decode(
                WireReader(value), as: fieldType, fraction: fraction.map { WireReader($0, path: FieldValue.fractionKey) })
        default:
            return nil
        }
    }
}
