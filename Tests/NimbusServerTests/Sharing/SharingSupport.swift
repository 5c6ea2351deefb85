import NimbusProtocol
import Testing

/// Requests of the sharing tests, in CloudKit Web Services' shapes (docs/SHARING.md).
extension TestClient {
    /// `records/modify` in the caller's `shared` database, in `owner`'s zone.
    func sharedModify(_ zone: String, owner: String, _ operations: [JSON]) async throws -> Reply {
        try await post(
            "records/modify",
            ["zoneID": ["zoneName": .string(zone), "ownerRecordName": .string(owner)], "operations": .array(operations)],
            scope: "shared")
    }

    func sharedChanges(_ zone: String, owner: String, since token: String? = nil) async throws -> Reply {
        var body: [String: JSON] = ["zoneID": ["zoneName": .string(zone), "ownerRecordName": .string(owner)]]
        if let token { body["syncToken"] = .string(token) }
        return try await post("records/changes", .object(body), scope: "shared")
    }

    func sharedLookup(_ zone: String, owner: String, _ names: [String]) async throws -> Reply {
        try await post(
            "records/lookup",
            [
                "zoneID": ["zoneName": .string(zone), "ownerRecordName": .string(owner)],
                "records": .array(names.map { ["recordName": .string($0)] }),
            ], scope: "shared")
    }

    func databaseChanges(scope: String = "shared", since token: String? = nil) async throws -> Reply {
        var body: [String: JSON] = [:]
        if let token { body["syncToken"] = .string(token) }
        return try await post("changes/database", .object(body), scope: scope)
    }

    func resolve(_ shortGUID: String, fetchRoot: Bool = false) async throws -> Reply {
        try await post(
            "records/resolve", ["shortGUIDs": [["value": .string(shortGUID), "shouldFetchRootRecord": .bool(fetchRoot)]]],
            scope: "public")
    }

    func accept(_ shortGUID: String) async throws -> Reply {
        try await post("records/accept", ["shortGUIDs": [["value": .string(shortGUID)]]], scope: "public")
    }

    /// The record names of a change feed or lookup reply's live records.
    static func names(_ reply: Reply) -> Set<String> {
        Set(reply.records.filter { $0["deleted"]?.bool != true && $0["serverErrorCode"] == nil }.compactMap { $0["recordName"]?.string })
    }
}

/// A record operation with a `parent`, `share` or share members.
func sharingOp(
    _ type: String, _ name: String, _ recordType: String = "Photo", fields: [String: JSON] = [:], parent: String? = nil,
    share: String? = nil, extra: [String: JSON] = [:], tag: String? = nil
) -> JSON {
    var record: [String: JSON] = ["recordName": .string(name), "recordType": .string(recordType)]
    if !fields.isEmpty { record["fields"] = .object(fields.mapValues { ["value": $0] }) }
    if let parent { record["parent"] = ["recordName": .string(parent), "action": "NONE"] }
    if let share { record["share"] = ["recordName": .string(share), "action": "NONE"] }
    if let tag { record["recordChangeTag"] = .string(tag) }
    record.merge(extra) { _, new in new }
    return ["operationType": .string(type), "record": .object(record)]
}

/// A share record operation: participants by record name (or email) and permission.
func shareOp(
    _ name: String, type: String = "create", publicPermission: String = "NONE",
    participants: [(user: String, permission: String)] = [], emails: [(email: String, permission: String)] = [],
    title: String = "Shared", tag: String? = nil
) -> JSON {
    let invited: [JSON] =
        participants.map { ["userIdentity": ["userRecordName": .string($0.user)], "permission": .string($0.permission)] }
        + emails.map {
            ["userIdentity": ["lookupInfo": ["emailAddress": .string($0.email)]], "permission": .string($0.permission)]
        }
    return sharingOp(
        type, name, "cloudkit.share", fields: ["cloudkit.title": .string(title)],
        extra: ["publicPermission": .string(publicPermission), "participants": .array(invited)], tag: tag)
}
