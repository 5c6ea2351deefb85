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
            return .object([
                "recordName": .string(stored.recordName),
                "recordType": .string(stored.recordType),
                "recordChangeTag": .string(stored.changeTag),
                "fields": .raw(stored.fieldsJSON),
                "created": Self.stampJSON(stored.created),
                "modified": Self.stampJSON(stored.modified),
                "deleted": .bool(false),
                "zoneID": zoneID.wireJSON,
            ])
        }
        return try stored.record(zoneID: zoneID).wireJSON(numbersAsStrings: numbersAsStrings, desiredKeys: desiredKeys)
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
