import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Every write path hands what it committed to the one ``PushDelivery`` seam, and only once
/// the commit is done: saves and deletes of records, zones created and deleted.
@Suite("One push seam for every write path")
struct PushDeliverySeamTests {
    @Test(arguments: Engine.available) func recordAndZoneWritesGoThroughTheSeam(engine: Engine) async throws {
        let recorder = DeliveryRecorder()
        try await TestServer.with(engine, delivery: { hub in recorder.forwarding(to: hub) }) { server in
            let alice = try await server.user("alice")
            let subscribed = try await alice.subscribe(["subscriptionID": "everything", "subscriptionType": "database"])
            #expect(subscribed.status == 200)
            #expect(await recorder.delivered.isEmpty)

            // A zone write (zones/modify): a database subscription hears of it.
            _ = try await alice.createZone("Z")
            let afterZone = await recorder.delivered
            #expect(afterZone.count == 1)
            #expect(afterZone.first?.recipient == alice.recipient)

            // A record write (records/modify).
            let saved = try await alice.modify("Z", [op("create", "r1")])
            #expect(saved.status == 200)
            let afterRecord = await recorder.delivered
            #expect(afterRecord.count == 2)
            #expect(afterRecord.map(\.sequence) == afterRecord.map(\.sequence).sorted())

            // A write that commits nothing hands nothing over.
            let refused = try await alice.modify("Z", [op("create", "r1")])
            #expect(refused.records.first?["serverErrorCode"] == "EXISTS")
            #expect(await recorder.delivered.count == 2)

            // Every notification the seam saw is one the collection holds.
            let collected = try await alice.allNotifications()
            #expect(collected.count == 2)
        }
    }
}

/// A ``PushDelivery`` that records what it is handed and passes it on.
private actor DeliveryRecorder {
    private(set) var delivered: [StoredNotification] = []

    func record(_ notifications: [StoredNotification]) { delivered += notifications }

    nonisolated func forwarding(to next: any PushDelivery) -> any PushDelivery {
        Forwarder(recorder: self, next: next)
    }

    private struct Forwarder: PushDelivery {
        let recorder: DeliveryRecorder
        let next: any PushDelivery

        func deliver(_ notifications: [StoredNotification]) async {
            guard !notifications.isEmpty else { return }
            await recorder.record(notifications)
            await next.deliver(notifications)
        }
    }
}
