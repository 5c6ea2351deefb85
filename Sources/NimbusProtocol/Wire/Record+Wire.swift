extension RecordStamp {
    init(wire reader: WireReader) throws(CloudKitError) {
        self.init(
            timestamp: try reader.optionalInt("timestamp") ?? 0,
            userRecordName: try reader.optionalString("userRecordName"),
            deviceID: try reader.optionalString("deviceID"))
    }

    var wireJSON: JSON {
        var members: [String: JSON] = ["timestamp": .int(timestamp)]
        if let userRecordName { members["userRecordName"] = .string(userRecordName) }
        if let deviceID { members["deviceID"] = .string(deviceID) }
        return .object(members)
    }
}

extension Record {
    /// Decodes a record dictionary. `recordName` may be absent (the server then names the
    /// record); `recordType` may be absent only on deletes, where it is ignored.
    package init(wire reader: WireReader) throws(CloudKitError) {
        _ = try reader.object()
        let recordName = try reader.optionalString("recordName") ?? ""
        let recordType = try reader.optionalString("recordType") ?? ""
        var fields: [String: FieldValue] = [:]
        if let fieldsReader = try reader.optional("fields") {
            for (name, value) in try fieldsReader.object() {
                guard !name.isEmpty else { throw .badRequest("'\(fieldsReader.path)' has a field with an empty name") }
                fields[name] = try FieldValue.recordField(wire: fieldsReader.reader(for: value, member: name))
            }
        }
        self.init(
            recordName: recordName,
            recordType: recordType,
            recordChangeTag: try reader.optionalString("recordChangeTag"),
            fields: fields,
            created: try reader.optional("created").map { r throws(CloudKitError) in try RecordStamp(wire: r) },
            modified: try reader.optional("modified").map { r throws(CloudKitError) in try RecordStamp(wire: r) },
            deleted: try reader.optionalBool("deleted") ?? false,
            zoneID: try reader.optional("zoneID").map { r throws(CloudKitError) in try ZoneID(wire: r) })
    }

    /// The record dictionary. A deleted record is `{recordName, deleted: true}` (plus zoneID).
    /// - Parameter desiredKeys: when given, only these fields are included.
    package func wireJSON(numbersAsStrings: Bool = false, desiredKeys: Set<String>? = nil) -> JSON {
        var members: [String: JSON] = ["recordName": .string(recordName)]
        if let zoneID { members["zoneID"] = zoneID.wireJSON }
        if deleted {
            members["deleted"] = .bool(true)
            return .object(members)
        }
        members["recordType"] = .string(recordType)
        if let recordChangeTag { members["recordChangeTag"] = .string(recordChangeTag) }
        var fieldMembers: [String: JSON] = [:]
        for (name, value) in fields where desiredKeys?.contains(name) ?? true {
            fieldMembers[name] = value.wireJSON(numbersAsStrings: numbersAsStrings)
        }
        members["fields"] = .object(fieldMembers)
        if let created { members["created"] = created.wireJSON }
        if let modified { members["modified"] = modified.wireJSON }
        members["deleted"] = .bool(false)
        return .object(members)
    }

    /// Only the fields as a JSON object of field dictionaries (what the store keeps).
    package static func fieldsJSON(_ fields: [String: FieldValue], numbersAsStrings: Bool = false) -> JSON {
        .object(fields.mapValues { $0.wireJSON(numbersAsStrings: numbersAsStrings) })
    }

    /// The text of ``fieldsJSON(_:numbersAsStrings:)`` serialized (members in sorted key
    /// order), written directly: this is what the store keeps for every record it writes.
    package static func fieldsJSONText(_ fields: [String: FieldValue], numbersAsStrings: Bool = false) -> String {
        String(decoding: fieldsJSONBytes(fields, numbersAsStrings: numbersAsStrings), as: UTF8.self)
    }

    /// ``fieldsJSONText(_:numbersAsStrings:)`` as UTF-8 bytes, for a caller that binds them
    /// straight into a statement.
    package static func fieldsJSONBytes(_ fields: [String: FieldValue], numbersAsStrings: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 * fields.count + 2)
        out.append(UInt8(ascii: "{"))
        // The dictionary's positions are sorted by key: no array of (key, value) pairs to
        // build and release, and no key hashed again.
        for (offset, index) in fields.indices.sorted(by: { fields[$0].key < fields[$1].key }).enumerated() {
            if offset > 0 { out.append(UInt8(ascii: ",")) }
            let (name, value) = fields[index]
            JSON.writeString(name, into: &out)
            out.append(UInt8(ascii: ":"))
            value.writeWire(into: &out, numbersAsStrings: numbersAsStrings)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// Decodes stored fields one at a time: a field that does not decode (a value an older
    /// release let in, such as a DOUBLE stored as `null`) is left out and named in
    /// `skipped`, so one bad value costs that field of that record, never the read it is in.
    package static func fields(fromStored json: JSON) -> (fields: [String: FieldValue], skipped: [(name: String, error: CloudKitError)]) {
        var fields: [String: FieldValue] = [:]
        var skipped: [(name: String, error: CloudKitError)] = []
        let fieldsReader = WireReader(json, path: "fields")
        guard case .object(let members) = json else {
            return ([:], [("", CloudKitError(.internalError, "stored fields are \(json.kindName), not an object"))])
        }
        for (name, value) in members {
            do {
                fields[name] = try FieldValue(wire: fieldsReader.reader(for: value, member: name))
            } catch {
                skipped.append((name, error))
            }
        }
        return (fields, skipped)
    }

    /// Decodes a fields object as written by ``fieldsJSON(_:numbersAsStrings:)``.
    package static func fields(fromWire json: JSON) throws(CloudKitError) -> [String: FieldValue] {
        var fields: [String: FieldValue] = [:]
        let fieldsReader = WireReader(json, path: "fields")
        for (name, value) in try fieldsReader.object() {
            fields[name] = try FieldValue(wire: fieldsReader.reader(for: value, member: name))
        }
        return fields
    }
}
