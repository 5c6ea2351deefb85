import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NimbusStore
import ServiceLifecycle

/// Spans of traced changes on their way to the store: ended spans are buffered (one lock, no
/// I/O on the request's path) and written in batches every
/// ``TraceSettings/flushInterval`` by ``run()``, a service of the server's group.
///
/// Those periodic writes go in the background (`TraceStore.appendTraceSpansInBackground`: on
/// SQLite, a thread under `SCHED_IDLE`), so they yield the cores to requests; a backlog of
/// ``urgentBacklog`` spans or more (the background cannot keep up: the cores are busy), and
/// every ``flush()`` someone waits for, are written at the requests' priority instead. A
/// request's spans are made from what it recorded only there, in the write (``record(count:_:)``),
/// not on the request's path.
public final class TraceJournal: Service, Sendable {
    /// Spans waiting for the store: made already, or made when written.
    private enum Entry: Sendable {
        case span(TraceSpan)
        case deferred(count: Int, make: @Sendable () -> [TraceSpan])

        var count: Int {
            switch self {
            case .span: 1
            case .deferred(let count, _): count
            }
        }

        static func spans(of entries: CircularBuffer<Entry>) -> [TraceSpan] {
            var spans: [TraceSpan] = []
            spans.reserveCapacity(entries.count * 2)
            for entry in entries {
                switch entry {
                case .span(let span): spans.append(span)
                case .deferred(_, let make): spans.append(contentsOf: make())
                }
            }
            return spans
        }
    }

    private struct Buffer {
        var entries = CircularBuffer<Entry>()
        /// Spans in `entries`.
        var count = 0
        var dropped = 0
        /// Dropped since the last write: logged and counted with it.
        var droppedUnreported = 0
        var watchers: [UInt64: Watcher] = [:]
        var nextWatcher: UInt64 = 0
        /// The latest write to the store; each flush waits for the ones before it.
        var lastWrite: Task<Void, Never>?

        /// Appends an entry, dropping the oldest while the buffer would hold more than `limit`
        /// spans; returns whether the buffer was empty.
        mutating func append(_ entry: Entry, limit: Int) -> Bool {
            let wasEmpty = entries.isEmpty
            while count + entry.count > limit, let oldest = entries.popFirst() {
                count -= oldest.count
                dropped += oldest.count
                droppedUnreported += oldest.count
            }
            entries.append(entry)
            count += entry.count
            return wasEmpty
        }
    }

    private struct Watcher {
        var matches: @Sendable (TraceSpan) -> Bool
        var continuation: AsyncStream<TraceSpan>.Continuation
    }

    let store: any TraceStore
    let settings: TraceSettings
    /// Counts spans written and dropped (`nil`: metrics off).
    let metrics: ServerMetrics?
    /// `server <node>`: who recorded this node's spans.
    let source: String
    /// Where spans go besides the store (`nil`: nowhere).
    let exporter: OTLPExporter?
    private let logger: Logger
    private let buffer = NIOLockedValueBox(Buffer())
    /// The time spans are pruned by (``TraceSettings/retention``).
    private let clock: WallClock
    /// Signalled when a span arrives in an empty buffer: ``run()`` sleeps until then, so an
    /// idle server does not wake every flush interval.
    private let arrivals: AsyncStream<Void>
    private let arrived: AsyncStream<Void>.Continuation

    init(
        store: any TraceStore, settings: TraceSettings, metrics: ServerMetrics? = nil, exporter: OTLPExporter? = nil,
        logger: Logger, clock: WallClock = .system
    ) {
        self.clock = clock
        self.store = store
        self.settings = settings
        self.metrics = metrics
        self.exporter = exporter
        self.source = "server \(settings.nodeName ?? ProcessInfo.processInfo.hostName)"
        self.logger = logger
        (arrivals, arrived) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// A write of this many spans or more goes at the requests' priority: a tenth of the buffer.
    var urgentBacklog: Int { max(1, settings.bufferLimit / 10) }

    /// Spans dropped because the buffer was full (the store could not keep up).
    public var droppedSpans: Int { buffer.withLockedValue { $0.dropped } }

    /// Queues an ended span for the store.
    func record(_ span: TraceSpan) {
        let (watchers, first) = buffer.withLockedValue { buffer -> ([Watcher], Bool) in
            let first = buffer.append(.span(span), limit: settings.bufferLimit)
            return (buffer.watchers.isEmpty ? [] : Array(buffer.watchers.values), first)
        }
        if first { arrived.yield() }
        for watcher in watchers where watcher.matches(span) { watcher.continuation.yield(span) }
    }

    /// Queues `count` ended spans that `make` makes when they are written (off the request's
    /// path; at once if someone watches spans as they end).
    func record(count: Int, _ make: @escaping @Sendable () -> [TraceSpan]) {
        let (watched, first) = buffer.withLockedValue { buffer -> (Bool, Bool) in
            guard buffer.watchers.isEmpty else { return (true, false) }
            return (false, buffer.append(.deferred(count: count, make: make), limit: settings.bufferLimit))
        }
        if first { arrived.yield() }
        if watched { for span in make() { record(span) } }
    }

    /// The spans recorded on this node from now on that `matches` (a test awaiting a hop, a
    /// live view), as they end. Registered before this returns, so no later span is missed;
    /// ends when the iteration does.
    public func spans(where matches: @escaping @Sendable (TraceSpan) -> Bool) -> AsyncStream<TraceSpan> {
        let (stream, continuation) = AsyncStream<TraceSpan>.makeStream()
        let id = buffer.withLockedValue { buffer in
            defer { buffer.nextWatcher += 1 }
            buffer.watchers[buffer.nextWatcher] = Watcher(matches: matches, continuation: continuation)
            return buffer.nextWatcher
        }
        continuation.onTermination = { [buffer] _ in
            _ = buffer.withLockedValue { $0.watchers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Writes what is buffered now, after the writes already under way (tests, shutdown, readers
    /// that must see every span ended so far), at the requests' priority.
    public func flush() async {
        await flush(inBackground: false)
    }

    /// Writes what is buffered now, after the writes already under way; in the background
    /// unless it is a backlog of ``urgentBacklog`` spans or more.
    private func flush(inBackground: Bool) async {
        let (write, dropped) = buffer.withLockedValue { buffer -> (Task<Void, Never>, Int) in
            let entries = buffer.entries
            let count = buffer.count
            buffer.entries.removeAll(keepingCapacity: true)
            buffer.count = 0
            let dropped = buffer.droppedUnreported
            buffer.droppedUnreported = 0
            let previous = buffer.lastWrite
            let background = inBackground && count < urgentBacklog
            let write = Task {
                await previous?.value
                await self.write(entries, count: count, inBackground: background)
            }
            buffer.lastWrite = write
            return (write, dropped)
        }
        if dropped > 0 {
            metrics?.countTraceSpansDropped(dropped)
            logger.warning(
                "trace spans dropped: the buffer was full and the store did not keep up",
                metadata: ["spans": "\(dropped)", "buffer": "\(settings.bufferLimit)"])
        }
        await write.value
    }

    /// Writes `entries`, which hold `count` spans.
    private func write(_ entries: CircularBuffer<Entry>, count: Int, inBackground: Bool) async {
        guard !entries.isEmpty else { return }
        // Made once, where the write runs (in the background on the writer's thread), for the
        // store and the collector alike.
        let exporter = exporter
        let make: @Sendable () -> [TraceSpan] = {
            let spans = Entry.spans(of: entries)
            exporter?.enqueue(spans)
            return spans
        }
        do {
            if inBackground {
                try await store.appendTraceSpansInBackground(make)
            } else {
                try await store.appendTraceSpans(make())
            }
            metrics?.countTraceSpansWritten(count)
        } catch {
            logger.warning("trace spans could not be written", metadata: ["spans": "\(count)", "error": "\(error)"])
        }
    }

    public func run() async throws {
        try? await cancelWhenGracefulShutdown {
            try await withThrowingTaskGroup(of: Void.self) { group in
                // Writes a flush interval after the first span of a batch arrives; idle, it sleeps.
                group.addTask {
                    for await _ in self.arrivals {
                        try await Task.sleep(for: self.settings.flushInterval)
                        await self.flush(inBackground: true)
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try await Task.sleep(for: .seconds(600))
                        await self.prune(now: self.clock.nowMillis() * 1000)
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        }
        await flush()
    }

    /// Deletes spans older than the retention.
    func prune(now micros: Int64) async {
        let cutoff = micros - settings.retention.components.seconds * 1_000_000
        do {
            let pruned = try await store.pruneTraceSpans(endedBefore: cutoff)
            if pruned > 0 { logger.debug("trace spans pruned", metadata: ["spans": "\(pruned)"]) }
        } catch {
            logger.warning("trace spans could not be pruned", metadata: ["error": "\(error)"])
        }
    }
}
