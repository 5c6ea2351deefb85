import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

/// The live page: this node's requests per second by operation, errors by status, latency
/// percentiles and open push connections, updated every second over server-sent events.
enum LivePage {
    /// The window the numbers cover.
    static let windowSeconds = 10
    /// How long one event stream lasts; the browser's `EventSource` then reconnects (so a
    /// stream never holds a shutting-down server for long).
    static let streamLifetime = 120
    /// The log lines shown.
    static let logLines = 60

    /// `GET /dashboard/live`.
    static func show(_ context: PageContext) async throws -> Response {
        let stats = await stats(context.app)
        return context.render(
            "live",
            [
                "title": "Live", "engine": context.app.store.engineName, "window": windowSeconds,
                "numbers": stats.numbers.map { ["key": $0.0, "label": $0.1, "value": $0.2] },
                "operations": stats.operations.map { ["cells": $0] }, "statuses": stats.statuses.map { ["cells": $0] },
                "errorCodes": stats.errorCodes.map { ["cells": $0] },
                "notifications": stats.notifications.map { ["cells": $0] }, "log": stats.log,
            ])
    }

    struct Stats {
        var numbers: [(String, String, String)]
        var operations: [[String]]
        var statuses: [[String]]
        var errorCodes: [[String]]
        var notifications: [[String]]
        var log: String

        var json: JSON {
            [
                "numbers": .object(Dictionary(uniqueKeysWithValues: numbers.map { ($0.0, JSON.string($0.2)) })),
                "operations": .array(operations.map { .array($0.map(JSON.string)) }),
                "statuses": .array(statuses.map { .array($0.map(JSON.string)) }),
                "errorCodes": .array(errorCodes.map { .array($0.map(JSON.string)) }),
                "notifications": .array(notifications.map { .array($0.map(JSON.string)) }),
                "log": .string(log),
            ]
        }
    }

    static func stats(_ app: DashboardApp) async -> Stats {
        let snapshot = app.server.statistics.snapshot(seconds: windowSeconds)
        let push = await app.server.push.connectedDevices
        let notifications = await app.server.push.recentNotifications.map { notification in
            [
                notification.recipient.container, notification.recipient.environment.rawValue,
                notification.recipient.userRecordName, notification.kind.rawValue, notification.subscriptionID,
                notification.zoneName ?? "", notification.recordName ?? "",
            ]
        }
        let millis = { (q: Double) in snapshot.latencyMillis(quantile: q).map { "≤ \(Format.decimal($0)) ms" } ?? "–" }
        return Stats(
            numbers: [
                ("total", "Requests since start", String(snapshot.total)),
                ("rate", "Requests per second", Format.decimal(Double(snapshot.requests) / Double(snapshot.seconds))),
                ("errors", "Error rate", Format.decimal(snapshot.errorRate * 100) + " %"),
                ("p50", "Latency p50", millis(0.5)), ("p90", "Latency p90", millis(0.9)), ("p99", "Latency p99", millis(0.99)),
                ("push", "Open push connections", String(push)),
                ("uptime", "Up for", "\(app.server.statistics.uptime.components.seconds) s"),
            ],
            operations: snapshot.ratesByOperation.map { [$0.operation, Format.decimal($0.perSecond)] },
            statuses: snapshot.byStatus.sorted { $0.key < $1.key }.map { [String($0.key), String($0.value)] },
            errorCodes: snapshot.byErrorCode.sorted { $0.key < $1.key }.map { [$0.key, String($0.value)] },
            notifications: notifications,
            log: app.server.logTail.map { $0.recentLines.suffix(logLines).joined(separator: "\n") }
                ?? "This server's logger does not keep a tail (nimbus serve does).")
    }

    /// `GET /dashboard/live/events`: an event `stats` every second.
    static func events(_ app: DashboardApp, _ request: Request) async -> Response {
        guard await OperatorAuth.session(of: request, app: app) != nil else {
            return Response(status: .unauthorized)
        }
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-store"
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                // Ends within a second of a graceful shutdown, so that the stream never holds
                // the server up.
                let stopping = NIOLockedValueBox(false)
                try await withGracefulShutdownHandler {
                    try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
                    for _ in 0..<streamLifetime where !stopping.withLockedValue({ $0 }) {
                        let stats = await stats(app)
                        try await writer.write(ByteBuffer(string: "event: stats\ndata: \(stats.json.serialized())\n\n"))
                        try await Task.sleep(for: .seconds(1))
                    }
                } onGracefulShutdown: {
                    stopping.withLockedValue { $0 = true }
                }
                try await writer.finish(nil)
            })
    }
}
