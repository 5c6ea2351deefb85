import Logging
import NimbusProtocol
import NimbusStore

/// One authenticated API request, parsed: who calls, which database, and the JSON body.
struct APICall: Sendable {
    var operation: APIOperation
    /// The request's HTTP method, for the operations that answer GET and POST differently
    /// (`users/discover`).
    var method: String = "POST"
    var identity: RequestIdentity
    /// The body (an empty object for GET and empty bodies).
    var body: WireReader
    /// The request's `numbersAsStrings`: INT64 values are written as strings.
    var numbersAsStrings: Bool
    /// `scheme://host[:port]` of URLs handed out in the answer (``OriginPolicy/responseOrigin(_:)``).
    var origin: String = ""
    /// `scheme://host[:port]` of links in mail: never the client's choice (``OriginPolicy/mailOrigin(_:)``).
    var mailOrigin: String = ""
    /// Signs the asset URLs handed out (`nil`: the server keeps no asset bytes).
    var assetLinks: AssetLinks? = nil
    /// How long a `downloadURL` handed out stays valid, in milliseconds.
    var assetDownloadLifetime: Int64 = 0
    /// When the call is served, in milliseconds since the epoch.
    var now: Int64 = 0
    /// The client's IP address, as the socket says (sign-in throttling).
    var peerAddress: String? = nil
    /// The request's logger: its lines carry the request's `request_id` (calls that come
    /// from no HTTP request, as the dashboard's, log nowhere).
    var logger: Logger = APICall.unlogged
    /// Set for a request in the background lane: the most records one transaction of its
    /// non-atomic batch of saves writes (``WritePolicy/transactionRecordLimit``).
    var transactionRecordLimit: Int? = nil

    static let unlogged = Logger(label: "nimbus", factory: { _ in SwiftLogNoOpLogHandler() })

    var database: DatabaseKey { identity.database }

    /// This call as it reaches `owner`'s private database through a share: the same caller,
    /// the owner's database and zone IDs.
    func actingInSharedZone(of owner: String) -> APICall {
        var call = self
        call.identity.sharedOwner = owner
        return call
    }

    /// The request's `zoneID`, the default zone when absent, checked against the caller.
    func zoneID(_ key: String = "zoneID", in reader: WireReader? = nil) throws(CloudKitError) -> ZoneID {
        let reader = reader ?? body
        guard let zoneReader = try reader.optional(key) else { return ZoneID.default }
        return try requestZoneID(zoneReader)
    }

    /// A zone ID the request names, its name checked against ``NameRules`` and its owner
    /// against the caller.
    func requestZoneID(_ reader: WireReader) throws(CloudKitError) -> ZoneID {
        let zoneID = try ZoneID(wire: reader)
        try NameRules.checkName(zoneID.zoneName, at: "\(reader.path).zoneName")
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
        guard let keysReader = try (reader ?? body).optional("desiredKeys") else { return nil }
        var keys = Set<String>()
        for key in try keysReader.array() {
            let name = try key.string()
            try NameRules.checkIdentifier(name, at: key.path, what: "field name")
            keys.insert(name)
        }
        return keys
    }

    /// A stored record as a response record dictionary. Without `desiredKeys` or
    /// `numbersAsStrings` it is written straight to text, byte for byte what the object form
    /// would serialize to (``StoredRecord/appendWritten(closedBy:to:)``).
    func recordJSON(_ stored: StoredRecord, zoneName: String, desiredKeys: Set<String>?) throws(CloudKitError) -> JSON {
        let stored = servable(stored)
        if desiredKeys == nil && !numbersAsStrings && !SystemFields.mentioned(in: stored.fieldsJSON) {
            var bytes: [UInt8] = []
            stored.writeWritten(closedBy: zoneClosing(zoneName), into: &bytes)
            return .rawUTF8(bytes)
        }
        let zoneID = responseZoneID(zoneName)
        if stored.deleted {
            return .object(["recordName": .string(stored.recordName), "deleted": .bool(true), "zoneID": zoneID.wireJSON])
        }
        return liftingSystemFields(
            stored.record(zoneID: zoneID).wireJSON(
                numbersAsStrings: numbersAsStrings, desiredKeys: Self.withSystemFields(desiredKeys)))
    }

    /// Records as a JSON array (a change feed or query page), element for element what
    /// ``recordJSON(_:zoneName:desiredKeys:)`` gives, as one text in the common case.
    func recordsJSON(_ records: [StoredRecord], zoneName: String, desiredKeys: Set<String>?) throws(CloudKitError) -> JSON {
        guard desiredKeys == nil && !numbersAsStrings, !records.contains(where: { SystemFields.mentioned(in: $0.fieldsJSON) })
        else {
            var elements: [JSON] = []
            elements.reserveCapacity(records.count)
            for stored in records {
                elements.append(try recordJSON(stored, zoneName: zoneName, desiredKeys: desiredKeys))
            }
            return .array(elements)
        }
        return .rawUTF8(StoredRecord.writtenBytes(records.map(servable), closedBy: zoneClosing(zoneName)))
    }

    /// `,"zoneID":{…}}`: the last member of each record of the zone, as this caller names
    /// the zone, and the record's closing brace.
    func zoneClosing(_ zoneName: String) -> String {
        var bytes: [UInt8] = Array(#","zoneID":"#.utf8)
        Self.writeZoneID(responseZoneID(zoneName), into: &bytes)
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
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

    static func stampJSON(_ stamp: RecordStamp) -> JSON {
        var members: [String: JSON] = ["timestamp": .int(stamp.timestamp)]
        if let user = stamp.userRecordName { members["userRecordName"] = .string(user) }
        if let device = stamp.deviceID { members["deviceID"] = .string(device) }
        return .object(members)
    }

    /// A per-item error dictionary. A `zoneID` of this database is written as success items
    /// write theirs, with the owner's record name (however the request named the owner, if
    /// at all); another owner's zone (an ACCESS_DENIED item) stays as the request named it.
    func errorJSON(_ error: CloudKitError) -> JSON {
        var error = error
        if let zoneID = error.zoneID, (try? identity.checkOwner(of: zoneID)) != nil {
            error.zoneID = responseZoneID(zoneID.zoneName)
        }
        error.serverRecord = error.serverRecord.map(servable)
        let json = error.wireJSON(uuid: APIResponder.newUUID(), numbersAsStrings: numbersAsStrings)
        guard case .object(var members) = json, let serverRecord = members["serverRecord"] else { return json }
        members["serverRecord"] = liftingSystemFields(serverRecord)
        return .object(members)
    }
}
