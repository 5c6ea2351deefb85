import Foundation
import Nimbus
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusSync
import NimbusTestSupport
import Testing

/// One change traced end to end: device A's send carries a `traceparent`, the server records the
/// request, the commit and the push under it, device B's push-triggered fetch continues the trace
/// and B reports how it applied the change; `traceView` (what `nimbus trace` prints) shows the
/// path and where it stopped.
@Suite("Tracing a change")
struct ChangeTraceTests {
    @Test func aChangeIsTracedFromOneDeviceThroughTheServerToTheOther() async throws {
        try await SyncHarness.with { harness in
            let configuration = SyncConfiguration(zones: ["ReadingList"])
            let (a, _) = try harness.engine("A", configuration: configuration)
            let (b, _) = try harness.engine("B", configuration: configuration)
            try await a.start()
            try await b.start()
            let listening = try await PushFeed.connect(harness.container(device: "B"))
            defer { listening.stop() }
            await b.listen(to: listening.notifications)
            // Registered before A saves: B's report of how it applied the change.
            let applied = harness.server.traces.spans { $0.name == "sync.apply" && $0.recordNames.contains("traced") }

            try a.store.write { _, outbox in
                try outbox.save(
                    LocalRecord(zoneName: "ReadingList", recordName: "traced", recordType: "Bookmark", fields: ["title": "hi"]))
            }
            try await a.sendChanges()
            let report = try #require(try await first(applied))
            #expect(report.source == "device B")
            #expect(report.attributes["outcome.applied"] == "1")

            await harness.server.traces.flush()
            let view = try await harness.server.store.traceView(of: report.traceID)
            #expect(view.stop == .applied, "\(view.text)")
            let names = view.hops.map(\.span.name)
            for hop in ["records/modify", "commit", "push", "sync.apply"] { #expect(names.contains(hop), "\(view.text)") }
            #expect(view.hops.contains { ["records/changes", "changes/zone"].contains($0.span.name) && $0.span.attributes["device"] == "B" })
            let modify = try #require(view.hops.first { $0.span.name == "records/modify" }?.span)
            #expect(modify.attributes["device"] == "A")
            #expect(modify.recordNames == ["traced"])
            let push = try #require(view.hops.first { $0.span.name == "push" }?.span)
            #expect(push.attributes["sent_to"] == "B")
            #expect(view.hops.allSatisfy { !$0.fromLaterTrace })
            // Hops in time order, the first at 0.
            #expect(view.hops.first?.offsetMillis == 0)
            #expect(zip(view.hops, view.hops.dropFirst()).allSatisfy { $0.offsetMillis <= $1.offsetMillis })
            #expect(view.text.contains("where it stopped: applied"))
            // The record's name finds the same trace.
            #expect(try await harness.server.store.traceView(of: "traced").traceID == report.traceID)
            await b.stopListening()
        }
    }

    @Test func theTraceSaysWhenTheMergeChoseTheServersValue() async throws {
        try await SyncHarness.with { harness in
            let zones = ["ReadingList"]
            let (a, _) = try harness.engine("A", configuration: SyncConfiguration(zones: zones))
            let (b, _) = try harness.engine(
                "B", configuration: SyncConfiguration(zones: zones, defaultMergeRules: MergeRules(defaultPolicy: .serverWins)))
            try await a.start()
            try a.store.write { _, outbox in
                try outbox.save(LocalRecord(zoneName: "ReadingList", recordName: "contested", recordType: "Bookmark", fields: ["title": "first"]))
            }
            try await a.sendChanges()
            try await b.start()
            // B edits the record and does not send; A's edit arrives by push.
            try b.store.write { _, outbox in
                try outbox.save(LocalRecord(zoneName: "ReadingList", recordName: "contested", recordType: "Bookmark", fields: ["title": "from B"]))
            }
            let feed = try await PushFeed.connect(harness.container(device: "B"))
            defer { feed.stop() }
            await b.listen(to: feed.notifications)
            let applied = harness.server.traces.spans { $0.name == "sync.apply" && $0.recordNames.contains("contested") }
            try a.store.write { _, outbox in
                try outbox.save(LocalRecord(zoneName: "ReadingList", recordName: "contested", recordType: "Bookmark", fields: ["title": "from A"]))
            }
            try await a.sendChanges()
            let report = try #require(try await first(applied))
            #expect(report.attributes["outcome.merge_chose_the_server's_value"] == "1", "\(report)")
            await harness.server.traces.flush()
            let view = try await harness.server.store.traceView(of: report.traceID)
            #expect(view.stop == .applied)
            #expect(view.verdict.contains("contested: merge chose the server's value"), "\(view.verdict)")
            await b.stopListening()
        }
    }

    @Test func aChangeTheServerRefusesShowsTheFailingHop() async throws {
        try await SyncHarness.with { harness in
            let database = harness.container(device: "A").privateCloudDatabase
            let requests = harness.server.traces.spans { $0.name == "records/modify" }
            let trace = RequestTrace.random()
            var record = Record(recordType: "Bookmark", recordID: .init(recordName: "refused"))
            record["bad.field"] = "dots are reserved"
            await #expect(throws: NimbusError.self) {
                try await RequestTrace.$current.withValue(trace) { _ = try await database.save(record) }
            }
            let refused = try #require(try await first(requests))
            #expect(refused.traceID == trace.traceID)
            #expect(refused.status == .error)
            #expect(refused.errorCode == "BAD_REQUEST")

            await harness.server.traces.flush()
            let view = try await harness.server.store.traceView(of: trace.traceID)
            #expect(view.stop == .rejected, "\(view.text)")
            #expect(view.verdict.contains("BAD_REQUEST"))
            #expect(view.text.contains("ERROR BAD_REQUEST"))
        }
    }

    @Test func aRecordRefusedInsideABatchIsNamedWithItsCode() async throws {
        try await SyncHarness.with { harness in
            let database = harness.container(device: "A").privateCloudDatabase
            let saved = try await database.save(Record(recordType: "Bookmark", recordID: .init(recordName: "contested")))
            var newer = saved
            newer["title"] = "changed elsewhere"
            _ = try await database.save(newer)
            var stale = saved  // its change tag is no longer the server's
            stale["title"] = "changed here"
            let trace = RequestTrace.random()
            let requests = harness.server.traces.spans { $0.name == "records/modify" && $0.traceID == trace.traceID }
            _ = try? await RequestTrace.$current.withValue(trace) {
                try await database.modifyRecords(saving: [stale], savePolicy: .ifServerRecordUnchanged, atomically: false)
            }
            _ = try #require(try await first(requests))
            await harness.server.traces.flush()
            let view = try await harness.server.store.traceView(of: trace.traceID)
            #expect(view.stop == .rejected, "\(view.text)")
            #expect(view.verdict.contains("contested: CONFLICT"), "\(view.verdict)")
        }
    }

    @Test func aCommitNoSubscriptionMatchesAndAPushNoDeviceHears() async throws {
        try await SyncHarness.with { harness in
            let database = harness.container(device: "A").privateCloudDatabase
            // No subscription yet: nobody is told.
            let unheard = RequestTrace.random()
            let commits = harness.server.traces.spans { $0.name == "records/modify" && $0.traceID == unheard.traceID }
            try await RequestTrace.$current.withValue(unheard) {
                _ = try await database.save(Record(recordType: "Note", recordID: .init(recordName: "quiet")))
            }
            _ = try #require(try await first(commits))
            await harness.server.traces.flush()
            let quiet = try await harness.server.store.traceView(of: unheard.traceID)
            #expect(quiet.stop == .committedUnheard, "\(quiet.text)")

            // The engine subscribes; its device is not connected, so the push reaches nobody.
            let (a, _) = try harness.engine("A", configuration: SyncConfiguration(zones: ["ReadingList"]))
            try await a.start()
            let pushes = harness.server.traces.spans { $0.name == "push" && $0.recordNames.isEmpty }
            try a.store.write { _, outbox in
                try outbox.save(LocalRecord(zoneName: "ReadingList", recordName: "unread", recordType: "Bookmark", fields: [:]))
            }
            try await a.sendChanges()
            let push = try #require(try await first(pushes))
            #expect(push.attributes["devices"] == "0")
            await harness.server.traces.flush()
            let offline = try await harness.server.store.traceView(of: push.traceID)
            #expect(offline.stop == .deviceOffline, "\(offline.text)")

            // A change no device has sent: the server knows nothing of it.
            let unsent = try await harness.server.store.traceView(of: "never-sent")
            #expect(unsent.stop == .notSent)
            #expect(unsent.hops.isEmpty)
        }
    }

    @Test func aServerThatDoesNotTraceRecordsNothing() async throws {
        try await SyncHarness.with(configure: { $0.tracing.enabled = false }) { harness in
            let database = harness.container(device: "A").privateCloudDatabase
            let trace = RequestTrace.random()
            try await RequestTrace.$current.withValue(trace) {
                _ = try await database.save(Record(recordType: "Note", recordID: .init(recordName: "untraced")))
                let accepted = try await database.reportTraceSpans([
                    TraceSpanReport(trace: trace.child(), name: "app.step", start: Date(), end: Date())
                ])
                #expect(accepted == 0)
            }
            await harness.server.traces.flush()
            #expect(try await harness.server.store.traceSpans(traceID: trace.traceID).isEmpty)
        }
    }
}
