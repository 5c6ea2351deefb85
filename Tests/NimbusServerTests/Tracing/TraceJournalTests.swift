import Foundation
import Logging
import NIOConcurrencyHelpers
import NimbusStore
import Prometheus
import Testing

@testable import NimbusServer

/// The journal's periodic writes go in the background (the store's low-priority path); a
/// flush someone waits for, and a backlog the background did not keep up with, go at the
/// requests' priority.
@Suite("Trace journal: background writes")
struct TraceJournalTests {
    enum Write: Equatable {
        case background(Int)
        case foreground(Int)
    }

    /// Tells each write and which way it came.
    struct RecordingTraces: TraceStore {
        let writes: AsyncStream<Write>.Continuation
        func appendTraceSpans(_ spans: [TraceSpan]) async throws { writes.yield(.foreground(spans.count)) }
        func appendTraceSpansInBackground(_ make: @escaping @Sendable () -> [TraceSpan]) async throws {
            writes.yield(.background(make().count))
        }
        func traceSpans(traceID: String) async throws -> [TraceSpan] { [] }
        func traceIDs(touchingRecord recordName: String, limit: Int) async throws -> [String] { [] }
        func pruneTraceSpans(endedBefore micros: Int64) async throws -> Int { 0 }
    }

    static func span(_ number: Int) -> TraceSpan {
        TraceSpan(
            traceID: String(repeating: "ab", count: 16), spanID: String(format: "%016x", number), parentSpanID: nil,
            name: "records/modify", source: "server test", startMicros: 1, endMicros: 2)
    }

    struct TimedOut: Error {}

    /// A journal over a recording store, with the first write it makes. `run()` runs if
    /// `running` (after `before` recorded what it does), and is cancelled at the end.
    static func firstWrite(
        bufferLimit: Int = 50_000, running: Bool, _ before: @escaping @Sendable (TraceJournal) async -> Void
    ) async throws -> Write? {
        let (writes, continuation) = AsyncStream<Write>.makeStream()
        var settings = TraceSettings()
        settings.flushInterval = .milliseconds(1)
        settings.bufferLimit = bufferLimit
        let journal = TraceJournal(
            store: RecordingTraces(writes: continuation), settings: settings, logger: Logger(label: "test"))
        #expect(journal.urgentBacklog == max(1, bufferLimit / 10))
        return try await withThrowingTaskGroup(of: Write?.self) { group in
            defer { group.cancelAll() }
            group.addTask { await writes.first { _ in true } }
            group.addTask {
                try await Task.sleep(for: .seconds(60))
                throw TimedOut()
            }
            await before(journal)
            if running { group.addTask { try await journal.run(); return nil } }
            return try await group.next()!
        }
    }

    @Test func periodicWritesGoInTheBackground() async throws {
        let write = try await Self.firstWrite(running: true) { $0.record(Self.span(1)) }
        #expect(write == .background(1))
    }

    @Test func aFlushSomeoneWaitsForGoesAtTheRequestsPriority() async throws {
        let write = try await Self.firstWrite(running: false) { journal in
            journal.record(Self.span(1))
            journal.record(Self.span(2))
            await journal.flush()
        }
        #expect(write == .foreground(2))
    }

    @Test func aBacklogIsWrittenAtTheRequestsPriority() async throws {
        // A tenth of a 100-span buffer: 10 spans waiting at once are a backlog.
        let write = try await Self.firstWrite(bufferLimit: 100, running: true) { journal in
            for number in 0..<30 { journal.record(Self.span(number)) }
        }
        #expect(write == .foreground(30))
    }

    @Test func droppedAndWrittenSpansAreCounted() async throws {
        let (writes, continuation) = AsyncStream<Write>.makeStream()
        var settings = TraceSettings()
        settings.bufferLimit = 10
        let registry = PrometheusCollectorRegistry()
        let journal = TraceJournal(
            store: RecordingTraces(writes: continuation), settings: settings, metrics: ServerMetrics(registry: registry),
            logger: Logger(label: "test"))
        for number in 0..<15 { journal.record(Self.span(number)) }
        #expect(journal.droppedSpans == 5)
        await journal.flush()
        continuation.finish()
        #expect(await writes.first { _ in true } == .foreground(10))
        var bytes: [UInt8] = []
        registry.emit(into: &bytes)
        let counts = MetricsScrape.parse(String(decoding: bytes, as: UTF8.self))
        #expect(counts["nimbus_trace_spans_dropped_total"] == 5)
        #expect(counts["nimbus_trace_spans_written_total"] == 10)
    }

    /// A request's spans are made when they are written, not when it ends, and a full buffer
    /// drops a request's spans together, oldest first.
    @Test func deferredSpansAreMadeWhenWrittenAndDroppedWhole() async throws {
        let (writes, continuation) = AsyncStream<Write>.makeStream()
        var settings = TraceSettings()
        settings.bufferLimit = 10
        let journal = TraceJournal(store: RecordingTraces(writes: continuation), settings: settings, logger: Logger(label: "test"))
        let made = NIOLockedValueBox<[Int]>([])
        for request in 0..<6 {
            journal.record(count: 2) {
                made.withLockedValue { $0.append(request) }
                return [Self.span(request * 2), Self.span(request * 2 + 1)]
            }
        }
        #expect(made.withLockedValue { $0 }.isEmpty, "nothing made on the requests' path")
        #expect(journal.droppedSpans == 2)
        await journal.flush()
        continuation.finish()
        #expect(await writes.first { _ in true } == .foreground(10))
        #expect(made.withLockedValue { $0 } == [1, 2, 3, 4, 5], "the oldest request's spans were dropped together")
    }
}
