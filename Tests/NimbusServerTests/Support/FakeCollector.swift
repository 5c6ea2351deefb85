import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import NimbusProtocol
import ServiceLifecycle

/// An OpenTelemetry collector's OTLP/HTTP endpoint on an ephemeral loopback port: keeps every
/// export it is sent (`POST /v1/traces`) and answers `status`.
final class FakeCollector: Sendable {
    /// One export as the collector took it.
    struct Export: Sendable {
        var headers: HTTPFields
        var json: JSON

        /// Each span of the export with its resource's attributes.
        var spans: [(resource: [String: String], span: JSON)] {
            var out: [(resource: [String: String], span: JSON)] = []
            for resource in json["resourceSpans"]?.array ?? [] {
                let attributes = FakeCollector.attributes(resource["resource"]?["attributes"])
                for scope in resource["scopeSpans"]?.array ?? [] {
                    for span in scope["spans"]?.array ?? [] { out.append((attributes, span)) }
                }
            }
            return out
        }
    }

    let url: String
    private let exports: NIOLockedValueBox<[Export]>
    private let status: NIOLockedValueBox<HTTPResponse.Status>
    /// Signalled after each export.
    private let arrivals: AsyncStream<Void>

    private init(
        url: String, exports: NIOLockedValueBox<[Export]>, status: NIOLockedValueBox<HTTPResponse.Status>,
        arrivals: AsyncStream<Void>
    ) {
        self.url = url
        self.exports = exports
        self.status = status
        self.arrivals = arrivals
    }

    /// OTLP's key-value list as a dictionary (string values).
    static func attributes(_ list: JSON?) -> [String: String] {
        var out: [String: String] = [:]
        for pair in list?.array ?? [] {
            if let key = pair["key"]?.string, let value = pair["value"]?["stringValue"]?.string { out[key] = value }
        }
        return out
    }

    /// What the collector answers from now on.
    func answer(_ status: HTTPResponse.Status) { self.status.withLockedValue { $0 = status } }

    /// The exports taken so far.
    var received: [Export] { exports.withLockedValue { $0 } }

    /// Waits until `done` holds of what was received, looking again after each export; fails
    /// after `timeout`.
    func wait(timeout: Duration = .seconds(30), until done: @escaping @Sendable ([Export]) -> Bool) async throws
        -> [Export]
    {
        let arrivals = self.arrivals
        let exports = self.exports
        return try await withThrowingTaskGroup(of: [Export].self) { group in
            group.addTask {
                var signals = arrivals.makeAsyncIterator()
                while true {
                    let now = exports.withLockedValue { $0 }
                    if done(now) { return now }
                    guard await signals.next() != nil else { throw TestTimeout("the collector stopped") }
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw TestTimeout("the collector did not receive the awaited spans within \(timeout)")
            }
            defer { group.cancelAll() }
            return try await group.next() ?? []
        }
    }

    /// Runs `body` with a collector listening, and stops it afterwards.
    static func with<T>(_ body: (FakeCollector) async throws -> T) async throws -> T {
        let exports = NIOLockedValueBox<[Export]>([])
        let status = NIOLockedValueBox<HTTPResponse.Status>(.ok)
        let (arrivals, arrived) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let router = Router()
        router.post("/v1/traces") { request, _ -> Response in
            let buffer = try await request.body.collect(upTo: 16 << 20)
            let json = (try? JSON.parse(Array(buffer.readableBytesView))) ?? .null
            exports.withLockedValue { $0.append(Export(headers: request.headers, json: json)) }
            arrived.yield()
            return Response(status: status.withLockedValue { $0 })
        }
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "fake-collector")
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            },
            logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let running = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            try await running.value
            throw TestTimeout("the fake collector did not start")
        }
        let collector = FakeCollector(
            url: "http://127.0.0.1:\(port)", exports: exports, status: status, arrivals: arrivals)
        do {
            let result = try await body(collector)
            await group.triggerGracefulShutdown()
            try await running.value
            return result
        } catch {
            await group.triggerGracefulShutdown()
            try? await running.value
            throw error
        }
    }
}
