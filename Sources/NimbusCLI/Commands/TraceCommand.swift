import ArgumentParser
import Foundation
import NimbusProtocol
import NimbusServer
import NimbusStore

/// `nimbus trace <trace ID | record name>`: one change's path, hop by hop, and where it stopped.
struct TraceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trace", abstract: "Show one traced change's path across devices and the server, and where it stopped.",
        discussion: """
            Takes a trace ID (32 hex digits: the SDK's `RequestTrace.traceID`, a `traceparent`'s second part) or a \
            record name (its latest trace). Reads the spans the server recorded in its store (SQLite data \
            directory or PostgreSQL URL, as `nimbus serve` uses them); a running server writes its spans within \
            a fraction of a second.
            """)
    @Argument(help: "A trace ID or a record name.") var idOrRecordName: String
    @OptionGroup var data: DataOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let view = try await withStore(data) { try await $0.traceView(of: idOrRecordName) }
        let hops: [JSON] = view.hops.map { hop in
            var object: [String: JSON] = [
                "name": .string(hop.span.name), "source": .string(hop.span.source), "traceID": .string(hop.span.traceID),
                "spanID": .string(hop.span.spanID), "offsetMillis": .double(hop.offsetMillis),
                "durationMillis": .double(Double(hop.span.endMicros - hop.span.startMicros) / 1000),
                "status": .string(hop.span.status.rawValue),
                "attributes": .object(hop.span.attributes.mapValues { .string($0) }),
                "recordNames": .array(hop.span.recordNames.map { .string($0) }),
            ]
            if let parent = hop.span.parentSpanID { object["parentSpanID"] = .string(parent) }
            if let code = hop.span.errorCode { object["errorCode"] = .string(code) }
            if let message = hop.span.message { object["message"] = .string(message) }
            return .object(object)
        }
        var json: [String: JSON] = [
            "hops": .array(hops), "stop": .string(view.stop.rawValue), "verdict": .string(view.verdict),
        ]
        if let traceID = view.traceID { json["traceID"] = .string(traceID) }
        emit(output, json: .object(json), text: view.text)
    }
}
