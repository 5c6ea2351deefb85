import NimbusProtocol
import NimbusStore

extension CloudKitAPI {
    /// `notifications/changes` (Nimbus extension): the signed-in user's notification
    /// collection since `syncToken`, paged by `resultsLimit`. Notifications marked read since
    /// the token come again with `isRead: true`.
    func notificationChanges(_ call: APICall) async throws -> JSON {
        let recipient = try Self.recipient(call)
        let page = try await notifications.notificationChanges(
            for: recipient, since: try call.body.optionalString("syncToken"), limit: try call.resultsLimit())
        return .object([
            "notifications": .array(page.notifications.map(Self.notificationJSON)),
            "syncToken": .string(page.syncToken),
            "moreComing": .bool(page.moreComing),
        ])
    }

    /// `notifications/markRead` (Nimbus extension): `notificationIDs: [String]` (or
    /// `notifications: [{notificationID}]`). The marks reach the user's other devices through
    /// `notifications/changes`.
    func markNotificationsRead(_ call: APICall) async throws -> JSON {
        let recipient = try Self.recipient(call)
        var ids = try call.body.optionalStringArray("notificationIDs") ?? []
        for reader in try call.body.optional("notifications")?.array() ?? [] {
            ids.append(try reader.required("notificationID").string())
        }
        guard !ids.isEmpty else { throw CloudKitError.badRequest("'notificationIDs' must name at least one notification") }
        guard ids.count <= ProtocolLimits.maxOperations else {
            throw CloudKitError(
                .limitExceeded, "\(ids.count) notifications in one request; the limit is \(ProtocolLimits.maxOperations)")
        }
        let results = try await notifications.markNotificationsRead(ids, for: recipient)
        return .object([
            "notifications": .array(
                results.map { result in
                    switch result {
                    case .marked(let id):
                        return .object(["notificationID": .string(id), "isRead": .bool(true)])
                    case .failed(let id, let error):
                        guard case .object(var members) = call.errorJSON(error) else { return call.errorJSON(error) }
                        members["notificationID"] = .string(id)
                        return .object(members)
                    }
                })
        ])
    }

    /// `tokens/create`: `{apnsEnvironment}` → `{apnsEnvironment, apnsToken, webcourierURL}`;
    /// the courier may be polled at once (its first poll registers the token).
    func createToken(_ call: APICall) async throws -> JSON {
        let recipient = try Self.recipient(call)
        let apnsEnvironment = try Self.apnsEnvironment(call, required: false)
        let token = try await notifications.createPushToken(
            for: recipient, apnsEnvironment: apnsEnvironment, now: now())
        return .object([
            "apnsEnvironment": .string(token.apnsEnvironment),
            "apnsToken": .string(token.token),
            "webcourierURL": .string(Self.webcourierURL(call, token: token.token)),
        ])
    }

    /// The long-poll URL of a push token, absolute on the origin the client reached
    /// (``RequestOrigin``).
    static func webcourierURL(_ call: APICall, token: String) -> String {
        "\(call.origin)/webcourier/\(token)"
    }

    /// `tokens/register`: `{apnsEnvironment, apnsToken}` → `{apnsEnvironment, apnsToken,
    /// webcourierURL}` (CloudKit JS reads the URL from this answer); the token's courier
    /// delivers the signed-in user's notifications from now on. Only a token `tokens/create` issued to that
    /// user registers: the token is its courier URL's credential.
    func registerToken(_ call: APICall) async throws -> JSON {
        let recipient = try Self.recipient(call)
        let apnsEnvironment = try Self.apnsEnvironment(call, required: true)
        let tokenValue = try call.body.required("apnsToken").string()
        guard !tokenValue.isEmpty, tokenValue.utf8.count <= 255 else {
            throw CloudKitError.badRequest("'apnsToken' must be 1 to 255 bytes")
        }
        let token = try await notifications.registerPushToken(
            tokenValue, for: recipient, apnsEnvironment: apnsEnvironment, now: now())
        return .object([
            "apnsEnvironment": .string(token.apnsEnvironment), "apnsToken": .string(token.token),
            "webcourierURL": .string(Self.webcourierURL(call, token: token.token)),
        ])
    }

    static func recipient(_ call: APICall) throws(CloudKitError) -> NotificationRecipient {
        guard let user = call.identity.user else {
            throw CloudKitError(
                .authenticationRequired, "notifications belong to a signed-in user: pass ckWebAuthToken")
        }
        return NotificationRecipient(
            container: call.identity.container, environment: call.identity.environment, userRecordName: user.recordName)
    }

    private static func apnsEnvironment(_ call: APICall, required: Bool) throws(CloudKitError) -> String {
        let reader = required ? try call.body.required("apnsEnvironment") : try call.body.optional("apnsEnvironment")
        let value = try reader?.string() ?? "development"
        guard value == "development" || value == "production" else {
            throw CloudKitError.badRequest("'apnsEnvironment' must be development or production, got '\(value)'")
        }
        return value
    }

    /// A notification of the collection:
    /// `{notificationID, notificationType, subscriptionID, containerIdentifier, databaseScope,
    /// zoneID?, recordName?, queryNotificationReason?, isRead, createdTimestamp, payload}`.
    static func notificationJSON(_ notification: StoredNotification) -> JSON {
        var members: [String: JSON] = [
            "notificationID": .string(notification.notificationID),
            "notificationType": .string(notification.kind.rawValue),
            "subscriptionID": .string(notification.subscriptionID),
            "containerIdentifier": .string(notification.recipient.container),
            "databaseScope": .string(notification.scope.rawValue),
            "isRead": .bool(notification.isRead),
            "createdTimestamp": .int(notification.createdAt),
            "payload": .raw(notification.payload),
        ]
        if let zoneName = notification.zoneName {
            members["zoneID"] = ZoneID(zoneName: zoneName, ownerRecordName: notification.zoneOwner).wireJSON
        }
        if let recordName = notification.recordName { members["recordName"] = .string(recordName) }
        if let reason = notification.reason { members["queryNotificationReason"] = .string(reason.name) }
        return .object(members)
    }
}
