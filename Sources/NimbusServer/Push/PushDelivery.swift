import NimbusStore

/// The one way committed notifications leave a write. Every write path — `records/modify`,
/// `zones/modify`, the user record made on a user's first request — hands the notifications
/// its commit created to a `PushDelivery` once the commit is durable, and nothing else sends
/// pushes. The server's is its ``PushHub``; a test can wrap it to see what would be sent:
///
/// ```swift
/// let server = try await RunningServer.start(configuration) { hub in Recorder(forwardingTo: hub) }
/// ```
public protocol PushDelivery: Sendable {
    /// Sends each notification to the connected devices of its recipient and wakes its web
    /// couriers. Never waits on a device.
    func deliver(_ notifications: [StoredNotification]) async
}

extension PushHub: PushDelivery {}
