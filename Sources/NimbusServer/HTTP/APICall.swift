import NimbusProtocol
import NimbusStore

/// One authenticated API request, parsed: who calls, which database, and the JSON body.
struct APICall: Sendable {
    var operation: APIOperation
    var identity: RequestIdentity
    /// The body (an empty object for GET and empty bodies).
    var body: WireReader
    /// The request's `numbersAsStrings`: INT64 values are written as strings.
    var numbersAsStrings: Bool
    /// `scheme://host[:port]` the client reached the server at (for URLs handed out).
    var origin: String = ""

    var database: DatabaseKey { identity.database }

    /// The request's `zoneID`, the default zone when absent, checked against the caller.
    func zoneID(_ key: String = "zoneID", in reader: WireReader? = nil) throws(CloudKitError) -> ZoneID {
        let reader = reader ?? body
        guard let zoneReader = try reader.optional(key) else { return ZoneID.default }
        let zoneID = try ZoneID(wire: zoneReader)
        try identity.checkOwner(of: zoneID)
        return zoneID
    }

    /// The zone ID as responses carry it: with the owner's record name.
    func responseZoneID(_ zoneName: String) -> ZoneID {
        ZoneID(zoneName: zoneName, ownerRecordName: database.owner)
    }

    /// `resultsLimit`, clamped to CloudKit's maximum.
    func resultsLimit(in reader: WireReader? = nil) throws(CloudKitError) -> Int {
        let reader = reader ?? body
        guard let limit = try reader.optionalInt("resultsLimit") else { return ProtocolLimits.maxResults }
        guard limit >= 1 else { throw .badRequest("'resultsLimit' must be at least 1") }
        return Int(min(limit, Int64(ProtocolLimits.maxResults)))
    }

    /// `desiredKeys` as a set, or `nil` for all fields.
    func desiredKeys(in reader: WireReader? = nil) throws(CloudKitError) -> Set<String>? {
        try (reader ?? body).optionalStringArray("desiredKeys").map(Set.init)
    }

    /// A stored record as a response record dictionary. Without `desiredKeys` or
    /// `numbersAsStrings` the stored fields JSON is spliced in as is.
    func recordJSON(_ stored: StoredRecord, zoneName: String, desiredKeys: Set<String>?) throws(CloudKitError) -> JSON {
        let zoneID = responseZoneID(zoneName)
        if stored.deleted {
            return .object(["recordName": .string(stored.recordName), "deleted": .bool(true), "zoneID": zoneID.wireJSON])
        }
        if desiredKeys == nil && !numbersAsStrings {
            // The hot path of modify answers and change feeds: the record dictionary written
            // straight to text, character for character what the object form below would
            // serialize to (members in sorted key order), with the stored fields spliced in.
            var text = ""
            text.reserveCapacity(stored.fieldsJSON.utf8.count + 300)
            Self.writeRecord(stored, zoneID: zoneID, into: &text)
            return .raw(text)
        }
        return try stored.record(zoneID: zoneID).wireJSON(numbersAsStrings: numbersAsStrings, desiredKeys: desiredKeys)
    }

    /// Records as a JSON array (a change feed page): written as one text in the common case
    /// (no `desiredKeys`, no `numbersAsStrings`), element for element what
    /// ``recordJSON(_:zoneName:desiredKeys:)`` gives.
    func recordsJSON(_ records: [StoredRecord], zoneName: String, desiredKeys: Set<String>?) throws(CloudKitError) -> JSON {
        guard desiredKeys == nil && !numbersAsStrings else {
            var elements: [JSON] = []
            elements.reserveCapacity(records.count)
            for stored in records {
                elements.append(try recordJSON(stored, zoneName: zoneName, desiredKeys: desiredKeys))
            }
            return .array(elements)
        }
        let zoneID = responseZoneID(zoneName)
        var text = ""
        text.reserveCapacity(records.reduce(2) { $0 + $1.fieldsJSON.utf8.count + 300 })
        text.append("[")
        for (offset, stored) in records.enumerated() {
            if offset > 0 { text.append(",") }
            if stored.deleted {
                // {deleted, recordName, zoneID}, as the object form serializes.
                text.append(#"{"deleted":true,"recordName":"#)
                JSON.writeString(stored.recordName, into: &text)
                text.append(#","zoneID":"#)
                Self.writeZoneID(zoneID, into: &text)
                text.append("}")
            } else {
                Self.writeRecord(stored, zoneID: zoneID, into: &text)
            }
        }
        text.append("]")
        return .raw(text)
    }

    /// Writes a live stored record as the dictionary
    /// `{created, deleted, fields, modified, recordChangeTag, recordName, recordType, zoneID}`,
    /// in the sorted member order ``JSON/serialized()`` uses.
    static func writeRecord(_ stored: StoredRecord, zoneID: ZoneID, into text: inout String) {
        text.append(#"{"created":"#)
        writeStamp(stored.created, into: &text)
        text.append(#","deleted":false,"fields":"#)
        text.append(stored.fieldsJSON)
        text.append(#","modified":"#)
        writeStamp(stored.modified, into: &text)
        text.append(#","recordChangeTag":"#)
        JSON.writeString(stored.changeTag, into: &text)
        text.append(#","recordName":"#)
        JSON.writeString(stored.recordName, into: &text)
        text.append(#","recordType":"#)
        JSON.writeString(stored.recordType, into: &text)
        text.append(#","zoneID":"#)
        writeZoneID(zoneID, into: &text)
        text.append("}")
    }

    /// `{ownerRecordName?, zoneName}`, as `ZoneID.wireJSON` serializes.
    static func writeZoneID(_ zoneID: ZoneID, into text: inout String) {
        text.append("{")
        if let owner = zoneID.ownerRecordName {
            text.append(#""ownerRecordName":"#)
            JSON.writeString(owner, into: &text)
            text.append(",")
        }
        text.append(#""zoneName":"#)
        JSON.writeString(zoneID.zoneName, into: &text)
        text.append("}")
    }

    /// `{deviceID?, timestamp, userRecordName?}`, as ``stampJSON(_:)`` serializes.
    static func writeStamp(_ stamp: RecordStamp, into text: inout String) {
        text.append("{")
        if let device = stamp.deviceID {
            text.append(#""deviceID":"#)
            JSON.writeString(device, into: &text)
            text.append(",")
        }
        text.append(#""timestamp":"#)
        text.append(String(stamp.timestamp))
        if let user = stamp.userRecordName {
            text.append(#","userRecordName":"#)
            JSON.writeString(user, into: &text)
        }
        text.append("}")
    }

    static func stampJSON(_ stamp: RecordStamp) -> JSON {
        var members: [String: JSON] = ["timestamp": .int(stamp.timestamp)]
        if let user = stamp.userRecordName { members["userRecordName"] = .string(user) }
        if let device = stamp.deviceID { members["deviceID"] = .string(device) }
        return .object(members)
    }

    /// A per-item error dictionary.
    func errorJSON(_ error: CloudKitError) -> JSON {
        error.wireJSON(uuid: APIResponder.newUUID(), numbersAsStrings: numbersAsStrings)
    }
}
