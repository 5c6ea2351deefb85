import NimbusStore

/// The write paths' ``PushDelivery`` with a count in front: every notification a commit on
/// this node created passes here once (relayed notifications of other nodes do not).
struct MeteredDelivery: PushDelivery {
    let inner: any PushDelivery
    let metrics: ServerMetrics

    func deliver(_ notifications: [StoredNotification]) async {
        metrics.countNotificationsCreated(notifications.count)
        await inner.deliver(notifications)
    }
}
