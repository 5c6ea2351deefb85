import NimbusProtocol
import NimbusStore
import W3CTraceContext

extension CloudKitAPI {
    /// Limits of `traces/report`, so a device's report stays a few kilobytes of facts.
    enum TraceReportLimits {
        static let spans = 100
        static let name = 64
        static let attributes = 32
        static let attributeKey = 64
        static let attributeValue = 512
        static let message = 1_000
        static let recordName = 255
    }

    /// `traces/report` (Nimbus extension): a device adds the hops only it can see — how its sync
    /// engine applied what a traced fetch brought (`sync.apply`), or why a send failed on its
    /// side — to the traces the server records.
    ///
    /// ```json
    /// {"spans": [{"traceparent": "00-<trace>-<span>-01", "parentSpanID": "<16 hex>", "name": "sync.apply",
    ///             "startTime": 1700000000000, "endTime": 1700000000004, "status": "ok",
    ///             "message": "2 applied, 1 merged", "attributes": {"zone": "Notes"}, "recordNames": ["n1"]}]}
    /// ```
    ///
    /// Answers `{"accepted": n}`: the spans of sampled traces, when the server traces at all.
    /// Spans are recorded as `device <deviceID>`, for the signed-in user.
    func reportTraceSpans(_ call: APICall) async throws -> JSON {
        guard let caller = call.identity.caller else {
            throw CloudKitError(.authenticationRequired, "reporting trace spans needs a signed-in user (ckWebAuthToken)")
        }
        let readers = try call.body.required("spans").array()
        guard readers.count <= TraceReportLimits.spans else {
            throw CloudKitError(
                .limitExceeded, "\(readers.count) spans in one report; the limit is \(TraceReportLimits.spans): split it")
        }
        let source = "device \(caller.deviceID ?? "(no device ID)")"
        var spans: [TraceSpan] = []
        for reader in readers {
            guard var span = try Self.reportedSpan(reader, source: source, user: caller.userRecordName) else { continue }
            // The database the report was addressed to (the SDK sends it to the one it synced),
            // so the dashboard knows whose data the hop names.
            span.attributes["container"] = call.database.container
            span.attributes["database"] = call.database.scope.rawValue
            spans.append(span)
        }
        guard let tracer, tracer.settings.enabled else { return .object(["accepted": 0]) }
        for span in spans { tracer.journal.record(span) }
        return .object(["accepted": .int(Int64(spans.count))])
    }

    /// One reported span, checked field by field; `nil` for a span of an unsampled trace.
    static func reportedSpan(_ reader: WireReader, source: String, user: String) throws(CloudKitError) -> TraceSpan? {
        let traceParent = try reader.required("traceparent").string()
        guard traceParent.utf8.count == 55, let context = try? TraceContext(traceParentHeaderValue: traceParent) else {
            throw CloudKitError.badRequest(
                "'\(reader.path).traceparent' is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)")
        }
        var parent: String?
        if let text = try reader.optionalString("parentSpanID") {
            let probe = "00-\(context.traceID)-\(text)-01"
            guard text.utf8.count == 16, let parsed = try? TraceContext(traceParentHeaderValue: probe) else {
                throw CloudKitError.badRequest("'\(reader.path).parentSpanID' must be 16 hex digits, not all zero")
            }
            parent = parsed.spanID.description
        }
        let name = try reader.required("name").string()
        guard !name.isEmpty, name.utf8.count <= TraceReportLimits.name else {
            throw CloudKitError.badRequest("'\(reader.path).name' must be 1 to \(TraceReportLimits.name) bytes")
        }
        let start = try reader.required("startTime").int()
        let end = try reader.optionalInt("endTime") ?? start
        guard start >= 0, end >= start, end < 1 << 50 else {
            throw CloudKitError.badRequest("'\(reader.path).startTime' and endTime must be milliseconds since 1970, end ≥ start")
        }
        let statusText = try reader.optionalString("status") ?? "ok"
        guard let status = TraceSpan.Status(rawValue: statusText) else {
            throw CloudKitError.badRequest("'\(reader.path).status' must be ok or error, got '\(statusText)'")
        }
        let code = try reader.optionalString("errorCode")
        let message = try reader.optionalString("message")
        guard (code?.utf8.count ?? 0) <= TraceReportLimits.name, (message?.utf8.count ?? 0) <= TraceReportLimits.message else {
            throw CloudKitError.badRequest(
                "'\(reader.path).errorCode' takes at most \(TraceReportLimits.name) bytes and message \(TraceReportLimits.message)")
        }
        var attributes: [String: String] = [:]
        if let object = try reader.optional("attributes") {
            let entries = try object.object()
            guard entries.count <= TraceReportLimits.attributes else {
                throw CloudKitError.badRequest("'\(reader.path).attributes' takes at most \(TraceReportLimits.attributes) entries")
            }
            for key in entries.keys.sorted() {
                let value = try object.required(key).string()
                guard key.utf8.count <= TraceReportLimits.attributeKey, value.utf8.count <= TraceReportLimits.attributeValue
                else {
                    throw CloudKitError.badRequest(
                        "'\(reader.path).attributes': keys take at most \(TraceReportLimits.attributeKey) bytes and values "
                            + "\(TraceReportLimits.attributeValue)")
                }
                attributes[key] = value
            }
        }
        attributes["user"] = user
        let names = try reader.optionalStringArray("recordNames") ?? []
        guard names.count <= TraceSpan.maxRecordNames, names.allSatisfy({ $0.utf8.count <= TraceReportLimits.recordName }) else {
            throw CloudKitError.badRequest(
                "'\(reader.path).recordNames' takes at most \(TraceSpan.maxRecordNames) names of \(TraceReportLimits.recordName) bytes")
        }
        guard context.flags.contains(.sampled) else { return nil }
        return TraceSpan(
            traceID: context.traceID.description, spanID: context.spanID.description, parentSpanID: parent, name: name,
            source: source, startMicros: start * 1000, endMicros: end * 1000, status: status, errorCode: code,
            message: message, attributes: attributes, recordNames: names)
    }
}
