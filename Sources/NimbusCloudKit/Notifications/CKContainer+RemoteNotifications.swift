import Foundation
import Nimbus

extension CKContainer {
    /// The pushes of this container's subscriptions for the signed-in user, as CloudKit
    /// notifications, from Nimbus's WebSocket push channel: how a process without APNs (on
    /// Linux, Android, Windows) receives what `application(_:didReceiveRemoteNotification:)`
    /// receives on Apple platforms. A Nimbus addition; CloudKit has no such method.
    ///
    /// ```swift
    /// for await notification in container.remoteNotifications() {
    ///     if let zone = notification as? CKRecordZoneNotification { … }
    /// }
    /// ```
    ///
    /// The channel reconnects by itself; the stream ends when the iterating task is cancelled.
    /// Without a configured server the stream ends at once.
    public func remoteNotifications() -> AsyncStream<CKNotification> {
        guard let nimbus else { return AsyncStream { $0.finish() } }
        let pushes = PushClient(container: nimbus).notifications()
        return AsyncStream { continuation in
            let task = Task {
                for await push in pushes { continuation.yield(CKNotification.from(push)) }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
