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
            // straight to text, byte for byte what the object form below would serialize to
            // (members in sorted key order), with the stored fields spliced in.
            var text = ""
            var scratch: [UInt8] = []
            Self.writeRecord(stored, zoneID: zoneID, into: &text, scratch: &scratch)
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
        var scratch: [UInt8] = []
        scratch.reserveCapacity(512)
        text.append("[")
        for (offset, stored) in records.enumerated() {
            if offset > 0 { text.append(",") }
            if stored.deleted {
                // {deleted, recordName, zoneID}, as the object form serializes.
                scratch.removeAll(keepingCapacity: true)
                scratch.append(contentsOf: #"{"deleted":true,"recordName":"#.utf8)
                JSON.writeString(stored.recordName, into: &scratch)
                scratch.append(contentsOf: #","zoneID":"#.utf8)
                Self.writeZoneID(zoneID, into: &scratch)
                scratch.append(UInt8(ascii: "}"))
                text.append(String(decoding: scratch, as: UTF8.self))
            } else {
                Self.writeRecord(stored, zoneID: zoneID, into: &text, scratch: &scratch)
            }
        }
        text.append("]")
        return .raw(text)
    }

    /// Appends a live stored record as the dictionary
    /// `{created, deleted, fields, modified, recordChangeTag, recordName, recordType, zoneID}`,
    /// in the sorted member order ``JSON/serialized()`` uses.
    ///
    /// The system members are written as bytes into `scratch` and turned into text in two
    /// pieces (cheap: they are nearly always ASCII); the stored fields, the bulk of a record,
    /// are appended as the string they already are, so they are never validated as UTF-8
    /// again (validating a page of text cost a tenth of a change-feed request).
    static func writeRecord(_ stored: StoredRecord, zoneID: ZoneID, into text: inout String, scratch: inout [UInt8]) {
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: #"{"created":"#.utf8)
        writeStamp(stored.created, into: &scratch)
        scratch.append(contentsOf: #","deleted":false,"fields":"#.utf8)
        text.append(String(decoding: scratch, as: UTF8.self))
        text.append(stored.fieldsJSON)
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: #","modified":"#.utf8)
        writeStamp(stored.modified, into: &scratch)
        scratch.append(contentsOf: #","recordChangeTag":"#.utf8)
        JSON.writeString(stored.changeTag, into: &scratch)
        scratch.append(contentsOf: #","recordName":"#.utf8)
        JSON.writeString(stored.recordName, into: &scratch)
        scratch.append(contentsOf: #","recordType":"#.utf8)
        JSON.writeString(stored.recordType, into: &scratch)
        scratch.append(contentsOf: #","zoneID":"#.utf8)
        writeZoneID(zoneID, into: &scratch)
        scratch.append(UInt8(ascii: "}"))
        text.append(String(decoding: scratch, as: UTF8.self))
    }

    /// `{ownerRecordName?, zoneName}`, as `ZoneID.wireJSON` serializes.
    static func writeZoneID(_ zoneID: ZoneID, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        if let owner = zoneID.ownerRecordName {
            out.append(contentsOf: #""ownerRecordName":"#.utf8)
            JSON.writeString(owner, into: &out)
            out.append(UInt8(ascii: ","))
        }
        out.append(contentsOf: #""zoneName":"#.utf8)
        JSON.writeString(zoneID.zoneName, into: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// `{deviceID?, timestamp, userRecordName?}`, as ``stampJSON(_:)`` serializes.
    static func writeStamp(_ stamp: RecordStamp, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        if let device = stamp.deviceID {
            out.append(contentsOf: #""deviceID":"#.utf8)
            JSON.writeString(device, into: &out)
            out.append(UInt8(ascii: ","))
        }
        out.append(contentsOf: #""timestamp":"#.utf8)
        out.append(contentsOf: String(stamp.timestamp).utf8)
        if let user = stamp.userRecordName {
            out.append(contentsOf: #","userRecordName":"#.utf8)
            JSON.writeString(user, into: &out)
        }
        out.append(UInt8(ascii: "}"))
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
