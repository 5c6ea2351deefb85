import Foundation
import Logging
import NIOConcurrencyHelpers
import NimbusStore
import ServiceLifecycle

/// Spans of traced changes on their way to the store: ended spans are buffered (one lock, no
/// I/O on the request's path) and written in batches every
/// ``TraceSettings/flushInterval`` by ``run()``, a service of the server's group.
public final class TraceJournal: Service, Sendable {
    private struct Buffer {
        var spans: [TraceSpan] = []
        var dropped = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    let store: any TraceStore
    let settings: TraceSettings
    /// `server <node>`: who recorded this node's spans.
    let source: String
    private let logger: Logger
    private let buffer = NIOLockedValueBox(Buffer())

    init(store: any TraceStore, settings: TraceSettings, logger: Logger) {
        self.store = store
        self.settings = settings
        self.source = "server \(settings.nodeName ?? ProcessInfo.processInfo.hostName)"
        self.logger = logger
    }

    /// Spans dropped because the buffer was full (the store could not keep up).
    public var droppedSpans: Int { buffer.withLockedValue { $0.dropped } }

    /// Queues an ended span for the store.
    func record(_ span: TraceSpan) {
        buffer.withLockedValue { buffer in
            if buffer.spans.count >= settings.bufferLimit {
                buffer.spans.removeFirst()
                buffer.dropped += 1
            }
            buffer.spans.append(span)
        }
    }

    /// Writes what is buffered now (tests, shutdown, `traces/…` reads that must see their own spans).
    public func flush() async {
        let spans = buffer.withLockedValue { buffer in
            defer { buffer.spans.removeAll(keepingCapacity: true) }
            return buffer.spans
        }
        guard !spans.isEmpty else { return }
        do {
            try await store.appendTraceSpans(spans)
        } catch {
            logger.warning("trace spans could not be written", metadata: ["spans": "\(spans.count)", "error": "\(error)"])
        }
    }

    public func run() async throws {
        try? await cancelWhenGracefulShutdown {
            var sincePrune = Duration.zero
            while !Task.isCancelled {
                try await Task.sleep(for: self.settings.flushInterval)
                await self.flush()
                sincePrune += self.settings.flushInterval
                if sincePrune >= .seconds(600) {
                    sincePrune = .zero
                    await self.prune(now: Int64(Date().timeIntervalSince1970 * 1_000_000))
                }
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
