import Foundation
import NimbusProtocol
import NimbusStore

/// What a commit announces with `pg_notify`: its notifications, or where to read them.
///
/// PostgreSQL limits a NOTIFY payload to 8,000 bytes. A commit whose notifications fit in
/// ``maxPayloadBytes`` sends them inline (the common case: no read on the listening side).
/// A larger one sends *references*: runs of one recipient's consecutive sequence numbers,
/// which the listener reads back from `notifications`; if even the references do not fit,
/// they are split into parts of one commit that the listener puts back together (a
/// transaction's notifications are delivered together, in order).
struct RemoteNotificationMessage: Codable, Sendable, Equatable {
    /// The largest payload sent, in bytes (PostgreSQL's limit is 8,000).
    static let maxPayloadBytes = 7_900

    /// The node that committed: a node ignores its own messages.
    var node: UUID
    /// One commit's parts share this.
    var commit: UUID
    var part: Int
    var parts: Int
    var notifications: [WireNotification]?
    var references: [Reference]?

    /// One recipient's notifications `first...last` (by creation sequence), in order.
    struct Reference: Codable, Sendable, Equatable {
        var container: String
        var environment: String
        var recipient: String
        var first: Int64
        var last: Int64
    }

    /// The messages announcing one commit's notifications, in order.
    static func encode(_ notifications: [StoredNotification], node: UUID) throws -> [String] {
        let commit = UUID()
        let inline = RemoteNotificationMessage(
            node: node, commit: commit, part: 0, parts: 1, notifications: notifications.map(WireNotification.init))
        let text = try inline.json()
        if text.utf8.count <= maxPayloadBytes { return [text] }

        var runs: [Reference] = []
        for notification in notifications {
            let recipient = notification.recipient
            if var run = runs.last, run.container == recipient.container,
                run.environment == recipient.environment.rawValue, run.recipient == recipient.userRecordName,
                run.last + 1 == notification.createdSequence
            {
                run.last = notification.createdSequence
                runs[runs.count - 1] = run
            } else {
                runs.append(
                    Reference(
                        container: recipient.container, environment: recipient.environment.rawValue,
                        recipient: recipient.userRecordName, first: notification.createdSequence,
                        last: notification.createdSequence))
            }
        }
        // Pack runs into parts by their encoded size, leaving room for the envelope.
        var chunks: [[Reference]] = [[]]
        var size = 0
        for run in runs {
            let runSize = try JSONEncoder().encode(run).count + 1
            if size + runSize > maxPayloadBytes - 200, !chunks[chunks.count - 1].isEmpty {
                chunks.append([])
                size = 0
            }
            chunks[chunks.count - 1].append(run)
            size += runSize
        }
        return try chunks.enumerated().map { index, chunk in
            try RemoteNotificationMessage(
                node: node, commit: commit, part: index, parts: chunks.count, notifications: nil, references: chunk
            ).json()
        }
    }

    static func decode(_ payload: String) -> RemoteNotificationMessage? {
        try? JSONDecoder().decode(RemoteNotificationMessage.self, from: Data(payload.utf8))
    }

    private func json() throws -> String {
        String(decoding: try JSONEncoder().encode(self), as: UTF8.self)
    }
}

/// A ``StoredNotification`` as JSON, with short keys to keep payloads small.
struct WireNotification: Codable, Sendable, Equatable {
    var c: String
    var e: String
    var u: String
    var seq: Int64
    var id: String
    var sid: String
    var kind: String
    var scope: String
    var zone: String?
    var zoneOwner: String?
    var record: String?
    var reason: Int?
    var originUser: String?
    var originDevice: String?
    var payload: String
    var badges: Bool
    var at: Int64

    init(_ notification: StoredNotification) {
        c = notification.recipient.container
        e = notification.recipient.environment.rawValue
        u = notification.recipient.userRecordName
        seq = notification.createdSequence
        id = notification.notificationID
        sid = notification.subscriptionID
        kind = notification.kind.rawValue
        scope = notification.scope.rawValue
        zone = notification.zoneName
        zoneOwner = notification.zoneOwner
        record = notification.recordName
        reason = notification.reason?.rawValue
        originUser = notification.originUser
        originDevice = notification.originDevice
        payload = notification.payload
        badges = notification.badges
        at = notification.createdAt
    }

    /// The notification as its commit created it (unread, at its creation sequence), or
    /// `nil` if a value is not one this build knows.
    var notification: StoredNotification? {
        guard let environment = ContainerEnvironment(rawValue: e), let kind = NotificationKind(rawValue: kind),
            let scope = DatabaseScope(rawValue: scope)
        else { return nil }
        return StoredNotification(
            recipient: NotificationRecipient(container: c, environment: environment, userRecordName: u),
            sequence: seq, createdSequence: seq, notificationID: id, subscriptionID: sid, kind: kind, scope: scope,
            zoneName: zone, zoneOwner: zoneOwner, recordName: record,
            reason: reason.flatMap(QueryNotificationReason.init(rawValue:)), originUser: originUser,
            originDevice: originDevice, payload: payload, isRead: false, badges: badges, createdAt: at)
    }
}
