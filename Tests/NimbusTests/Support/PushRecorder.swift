import Foundation
import Nimbus

/// Listens to a push client's events in the background and lets a test await them.
final class PushRecorder: Sendable {
    private let recorded = Locked<[PushEvent]>([])
    private let log = EventLog()
    private let finished = EventLog()
    private let task: Task<Void, Never>

    init(_ client: PushClient) {
        let (recorded, log, finished) = (recorded, log, finished)
        task = Task {
            for await event in client.events() {
                recorded.withLock { $0.append(event) }
                log.append(Self.describe(event))
            }
            finished.append("finished")
        }
    }

    /// Every event so far, described: `connected`, `push <zone> <subscription>`, `down <code>`.
    var events: [String] { log.events }

    /// The notifications received so far.
    var notifications: [PushNotification] {
        recorded.withLock { $0 }.compactMap {
            if case .notification(let notification) = $0 { return notification }
            return nil
        }
    }

    /// Waits until `count` events of the kind `prefix` have arrived.
    func wait(for count: Int, _ prefix: String) async throws {
        var needed = 0
        while events.filter({ $0.hasPrefix(prefix) }).count < count {
            needed = events.count + 1
            try await log.wait(forCount: needed)
        }
    }

    /// Waits until the event sequence ends (the client gave up).
    func waitUntilFinished() async throws {
        try await finished.wait(forCount: 1)
    }

    func stop() {
        task.cancel()
    }

    static func describe(_ event: PushEvent) -> String {
        switch event {
        case .connected: return "connected"
        case .notification(let notification):
            return "push \(notification.recordZoneID?.zoneName ?? "-") \(notification.subscriptionID ?? "-")"
        case .disconnected(let error, let wait): return "down \(error.code)\(wait == nil ? " final" : "")"
        }
    }
}
