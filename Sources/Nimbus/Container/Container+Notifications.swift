import Foundation
import NimbusProtocol

/// One page of the signed-in user's notification collection.
public struct NotificationChanges: Sendable {
    /// Notifications created, or marked read, since the token, oldest first.
    public var notifications: [PushNotification]
    public var changeToken: ServerChangeToken
    public var moreComing: Bool
}

extension Container {
    /// The signed-in user's notifications since `token` (all when `nil`): the notification
    /// collection every subscription writes to, which holds what a device missed while
    /// offline. Notifications marked read since the token come again with
    /// ``PushNotification/isRead`` set (Nimbus extension `notifications/changes`).
    public func notificationChanges(since token: ServerChangeToken?, resultsLimit: Int? = nil) async throws -> NotificationChanges {
        var body: [String: JSON] = [:]
        if let token { body["syncToken"] = .string(token.rawValue) }
        if let resultsLimit { body["resultsLimit"] = .int(resultsLimit) }
        let response = try await privateCloudDatabase.send("notifications/changes", body: .object(body))
        var notifications: [PushNotification] = []
        for entry in response["notifications"]?.array ?? [] {
            notifications.append(try PushNotification(collectionEntry: entry))
        }
        return NotificationChanges(
            notifications: notifications, changeToken: try Database.token(response),
            moreComing: response["moreComing"]?.bool ?? false)
    }

    /// Marks notifications read for all of the user's devices (`notifications/markRead`).
    /// - Returns: each notification's result.
    public func markNotificationsRead(
        _ notificationIDs: [String]
    ) async throws -> [String: Result<Void, NimbusError>] {
        let response = try await privateCloudDatabase.send(
            "notifications/markRead", body: .object(["notificationIDs": .array(notificationIDs.map(JSON.string))]))
        let items = try Database.items(response, "notifications", count: notificationIDs.count)
        var results: [String: Result<Void, NimbusError>] = [:]
        for (id, item) in zip(notificationIDs, items) {
            results[id] = NimbusError(wire: item).map { .failure($0) } ?? .success(())
        }
        return results
    }
}

extension PushNotification {
    /// An entry of the notification collection: `{notificationID, notificationType,
    /// subscriptionID, databaseScope, zoneID?, recordName?, isRead, createdTimestamp, payload}`.
    init(collectionEntry entry: JSON) throws {
        if let payload = entry["payload"], payload["ck"] != nil {
            try self.init(payload: payload)
        } else {
            try self.init(payload: ["ck": [:]])
            switch entry["notificationType"]?.string {
            case "query": kind = .query
            case "zone", "recordZone": kind = .recordZone
            case "database": kind = .database
            default: kind = .unknown
            }
        }
        notificationID = entry["notificationID"]?.string ?? notificationID
        subscriptionID = entry["subscriptionID"]?.string ?? subscriptionID
        containerIdentifier = entry["containerIdentifier"]?.string ?? containerIdentifier
        if let scope = entry["databaseScope"]?.string.flatMap(Database.Scope.init(rawValue:)) { databaseScope = scope }
        if let zoneJSON = entry["zoneID"], let zoneID = try? ZoneID(wire: WireReader(zoneJSON)) { recordZoneID = zoneID }
        if let recordName = entry["recordName"]?.string {
            recordID = Record.ID(recordName: recordName, zoneID: recordZoneID ?? .default)
        }
        isRead = entry["isRead"]?.bool ?? false
        creationDate = entry["createdTimestamp"]?.int64.map(Date.init(millisecondsSince1970:))
    }
}
