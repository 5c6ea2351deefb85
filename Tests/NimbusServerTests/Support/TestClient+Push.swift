import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport

extension TestClient {
    /// The same user on another device.
    func onDevice(_ deviceID: String?) -> TestClient {
        var client = self
        client.deviceID = deviceID
        return client
    }

    /// `subscriptions/modify` with one create operation.
    func subscribe(_ subscription: JSON, scope: String = "private") async throws -> Reply {
        try await post(
            "subscriptions/modify",
            ["operations": [["operationType": "create", "subscription": subscription]]], scope: scope)
    }

    /// `notifications/changes`.
    func notificationChanges(since token: String? = nil, limit: Int? = nil) async throws -> Reply {
        var body: [String: JSON] = [:]
        if let token { body["syncToken"] = .string(token) }
        if let limit { body["resultsLimit"] = .int(limit) }
        return try await post("notifications/changes", .object(body))
    }

    /// `notifications/markRead`.
    func markRead(_ ids: [String]) async throws -> Reply {
        try await post("notifications/markRead", ["notificationIDs": .array(ids.map(JSON.string))])
    }

    /// The notification collection's entries, read from the start.
    func allNotifications() async throws -> [JSON] {
        try await notificationChanges()["notifications"]?.array ?? []
    }

    /// The recipient key of this client's user.
    var recipient: NotificationRecipient {
        NotificationRecipient(
            container: container, environment: ContainerEnvironment(rawValue: environment) ?? .development,
            userRecordName: userRecordName ?? "")
    }
}

extension TestServer {
    /// Waits (at most `timeout`) until exactly `count` devices of the user are connected.
    func waitForDevices(_ count: Int, of client: TestClient, timeout: Duration = .seconds(60)) async throws {
        let hub = server.push
        let recipient = client.recipient
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await hub.waitForConnectedDevices(count, of: recipient) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw TestTimeout("\(count) devices were not connected within \(timeout)")
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }
}

/// A zone subscription dictionary.
func zoneSubscription(_ id: String, zone: String, info: JSON = ["shouldSendContentAvailable": true]) -> JSON {
    ["subscriptionID": .string(id), "subscriptionType": "zone", "zoneID": ["zoneName": .string(zone)], "notificationInfo": info]
}

/// A database subscription dictionary.
func databaseSubscription(_ id: String) -> JSON {
    ["subscriptionID": .string(id), "subscriptionType": "database", "notificationInfo": ["shouldSendContentAvailable": true]]
}

/// A query subscription dictionary.
func querySubscription(
    _ id: String, recordType: String, filters: [JSON] = [], firesOn: [String] = ["create", "update", "delete"],
    firesOnce: Bool = false, zone: String? = nil, zoneWide: Bool = false, desiredKeys: [String]? = nil
) -> JSON {
    var info: [String: JSON] = ["shouldSendContentAvailable": true]
    if let desiredKeys { info["desiredKeys"] = .array(desiredKeys.map(JSON.string)) }
    var members: [String: JSON] = [
        "subscriptionID": .string(id), "subscriptionType": "query",
        "query": ["recordType": .string(recordType), "filterBy": .array(filters)],
        "firesOn": .array(firesOn.map(JSON.string)), "firesOnce": .bool(firesOnce), "notificationInfo": .object(info),
    ]
    if let zone { members["zoneID"] = ["zoneName": .string(zone)] }
    if zoneWide { members["zoneWide"] = true }
    return .object(members)
}

/// A `filterBy` entry.
func filter(_ field: String, _ comparator: String, _ value: JSON) -> JSON {
    ["fieldName": .string(field), "comparator": .string(comparator), "fieldValue": ["value": value]]
}
