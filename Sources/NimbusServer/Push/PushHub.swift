import NIOCore
import NimbusProtocol
import NimbusStore
import W3CTraceContext

/// Delivers committed notifications to the connected devices of their recipients and wakes
/// the web couriers waiting for them.
///
/// Delivery never waits on a device: frames are handed to each connection's event loop with
/// a bound on how many may be unwritten (``PushConnection``), so a slow or dead socket holds
/// up neither the commit that made the notification nor any other device's push.
///
/// The device that made a change is not sent its notification; every other connected
/// device of the recipient is. Devices that were offline catch up when they reconnect
/// (``NotificationStore/catchUp(device:for:now:)``).
public actor PushHub {
    private var devices: [NotificationRecipient: [ObjectIdentifier: PushConnection]] = [:]
    private var couriers: [NotificationRecipient: [ObjectIdentifier: CourierSignal]] = [:]
    private var connectionCount = 0
    /// The latest notifications handed to ``deliver(_:)``, oldest first (at most twice
    /// ``recentLimit``, trimmed in bulk).
    private var recent: [StoredNotification] = []
    private let recentLimit = 20
    private var isShutDown = false
    private var watchers: [UInt64: (recipient: NotificationRecipient, count: Int, continuation: CheckedContinuation<Void, Never>)] = [:]
    private var nextWatcher: UInt64 = 0

    /// Records a `push` hop for each traced notification (`nil`: none).
    let tracer: NimbusTracer?
    /// Where frames queued to devices are counted (`nil`: nowhere).
    private let metrics: ServerMetrics?

    public init() {
        self.tracer = nil
        self.metrics = nil
    }

    init(tracer: NimbusTracer?, metrics: ServerMetrics?) {
        self.tracer = tracer
        self.metrics = metrics
    }

    /// The number of connected devices.
    public var connectedDevices: Int { connectionCount }

    /// The connected devices and the frames queued to them but not yet written (the `/metrics`
    /// gauges, read at each scrape).
    func gaugeReadings() -> (connections: Int, queuedFrames: Int) {
        var queued = 0
        for connections in devices.values {
            for connection in connections.values { queued += connection.queuedFrames }
        }
        return (connectionCount, queued)
    }

    /// The latest notifications this node delivered (or relayed from other nodes), newest first.
    public var recentNotifications: [StoredNotification] { Array(recent.suffix(recentLimit).reversed()) }

    /// The connected devices of a user.
    public func connectedDevices(of recipient: NotificationRecipient) -> [String] {
        devices[recipient, default: [:]].values.map(\.deviceID).sorted()
    }

    /// Adds a connection; `false` once the server is stopping.
    func register(_ connection: PushConnection) -> Bool {
        guard !isShutDown else { return false }
        devices[connection.recipient, default: [:]][ObjectIdentifier(connection)] = connection
        connectionCount += 1
        notifyWatchers(of: connection.recipient)
        return true
    }

    func unregister(_ connection: PushConnection) {
        guard devices[connection.recipient]?.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
        if devices[connection.recipient]?.isEmpty == true { devices[connection.recipient] = nil }
        connectionCount -= 1
        notifyWatchers(of: connection.recipient)
    }

    /// Returns once exactly `count` devices of `recipient` are connected (for tests and
    /// tools that must know a connection or a disconnection has been seen). Cancellable.
    public func waitForConnectedDevices(_ count: Int, of recipient: NotificationRecipient) async {
        guard devices[recipient, default: [:]].count != count else { return }
        let id = nextWatcher
        nextWatcher += 1
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume()
                } else {
                    watchers[id] = (recipient, count, continuation)
                }
            }
        } onCancel: {
            Task { await self.cancelWatcher(id) }
        }
    }

    private func cancelWatcher(_ id: UInt64) {
        watchers.removeValue(forKey: id)?.continuation.resume()
    }

    private func notifyWatchers(of recipient: NotificationRecipient) {
        let current = devices[recipient, default: [:]].count
        for (id, watcher) in watchers where watcher.recipient == recipient && watcher.count == current {
            watchers.removeValue(forKey: id)
            watcher.continuation.resume()
        }
    }

    /// Queues each notification for every connected device of its recipient except the one
    /// that made the change, and wakes the recipient's web couriers. Returns at once.
    public func deliver(_ notifications: [StoredNotification]) {
        var batch = PushWriteBatch()
        var pushed = 0
        defer {
            batch.flush()
            metrics?.countNotificationsPushed(pushed)
        }
        recent.append(contentsOf: notifications.suffix(recentLimit))
        if recent.count > 2 * recentLimit { recent.removeFirst(recent.count - recentLimit) }
        for notification in notifications {
            // Only a traced write's notifications carry a trace: the others pay for no device list.
            let trace = tracer.flatMap { tracer in
                tracer.settings.enabled
                    ? PayloadTraceParent.traceContext(inPayload: notification.payload).map { (tracer, $0) } : nil
            }
            var sent: [String] = []
            if let connections = devices[notification.recipient] {
                let frame = PushFrame(sequence: notification.sequence, payload: notification.payload)
                for connection in connections.values {
                    if notification.originated(byDevice: connection.deviceID) {
                        connection.skip(through: notification.sequence)
                    } else {
                        connection.enqueue(frame, into: &batch)
                        if trace != nil { sent.append(connection.deviceID) }
                        pushed += 1
                    }
                }
            }
            let waiting = couriers[notification.recipient]
            if let waiting {
                for signal in waiting.values { signal.fire() }
            }
            if let (tracer, parent) = trace {
                tracePush(notification, parent: parent, sentTo: sent, couriers: waiting?.count ?? 0, tracer: tracer)
            }
        }
    }

    /// The `push` hop of a traced notification: which devices it went to, or that none of the
    /// recipient's devices was connected to this node.
    private func tracePush(
        _ notification: StoredNotification, parent: TraceContext, sentTo devices: [String], couriers: Int, tracer: NimbusTracer
    ) {
        var attributes = [
            "user": notification.recipient.userRecordName, "subscription": notification.subscriptionID,
            "notification": notification.notificationID, "devices": String(devices.count),
            "container": notification.recipient.container, "database": notification.scope.rawValue,
        ]
        if !devices.isEmpty { attributes["sent_to"] = devices.sorted().joined(separator: ", ") }
        if couriers > 0 { attributes["web_couriers"] = String(couriers) }
        let message =
            devices.isEmpty && couriers == 0
            ? "no device of the recipient is connected to this node: the notification waits in the collection until a device connects"
            : "pushed to \(devices.count) device(s)" + (couriers > 0 ? " and \(couriers) web courier(s)" : "")
        tracer.recordInstant(
            "push", parent: parent, attributes: attributes,
            recordNames: notification.recordName.map { [$0] } ?? [], message: message)
    }

    /// Closes the connections opened with any of these sessions (revoked or expired).
    func closeConnections(ofSessions ids: Set<String>) {
        guard !ids.isEmpty else { return }
        for connection in allConnections() where connection.sessionID.map(ids.contains) == true {
            connection.closeSessionEnded()
        }
    }

    /// The sessions of the connected devices.
    func connectedSessionIDs() -> Set<String> {
        Set(devices.values.flatMap(\.values).compactMap(\.sessionID))
    }

    /// Every connection, for the sweeper.
    func allConnections() -> [PushConnection] {
        devices.values.flatMap(\.values)
    }

    func addCourier(_ signal: CourierSignal, for recipient: NotificationRecipient) {
        guard !isShutDown else {
            signal.fire()
            return
        }
        couriers[recipient, default: [:]][ObjectIdentifier(signal)] = signal
    }

    func removeCourier(_ signal: CourierSignal, for recipient: NotificationRecipient) {
        couriers[recipient]?.removeValue(forKey: ObjectIdentifier(signal))
        if couriers[recipient]?.isEmpty == true { couriers[recipient] = nil }
    }

    /// Closes every device's connection (going away), ends every long poll and refuses new
    /// ones (server shutdown).
    func shutDown() {
        isShutDown = true
        for connection in allConnections() { connection.closeGoingAway() }
        for signal in couriers.values.flatMap(\.values) { signal.fire() }
        couriers = [:]
    }
}
