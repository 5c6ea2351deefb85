import Foundation
import NimbusProtocol

/// One hop of a traced change: a span of the W3C trace that a client's `traceparent` started,
/// as the server (or a device, through `traces/report`) recorded it.
///
/// A change saved on device A and applied on device B leaves spans such as
/// `records/modify` (the request, with each record's outcome), `commit` (the transaction and the
/// notifications it created), `push` (which devices the notification went to, or that none was
/// connected), `records/changes` (device B's fetch) and `sync.apply` (device B's merge), all with
/// the same ``traceID``.
public struct TraceSpan: Sendable, Equatable, Codable {
    /// Whether the hop did what it was for.
    public enum Status: String, Sendable, Codable {
        case ok
        case error
    }

    /// 32 lowercase hex digits.
    public var traceID: String
    /// 16 lowercase hex digits.
    public var spanID: String
    public var parentSpanID: String?
    /// What the hop was: an API operation (`records/modify`), `commit`, `push`, `sync.apply`…
    public var name: String
    /// Who recorded it: `server <node>` or `device <device ID>`.
    public var source: String
    /// Microseconds since 1970.
    public var startMicros: Int64
    public var endMicros: Int64
    public var status: Status
    /// The CloudKit `serverErrorCode` when the hop failed (or some of its records did).
    public var errorCode: String?
    /// What happened, in words (no record contents, no tokens).
    public var message: String?
    /// Small facts: `container`, `zone`, `user`, `device`, `outcome`, counts.
    public var attributes: [String: String]
    /// The records the hop touched (at most ``maxRecordNames``), for finding a record's traces.
    public var recordNames: [String]

    /// The most record names a span keeps.
    public static let maxRecordNames = 400

    public init(
        traceID: String, spanID: String, parentSpanID: String? = nil, name: String, source: String,
        startMicros: Int64, endMicros: Int64, status: Status = .ok, errorCode: String? = nil, message: String? = nil,
        attributes: [String: String] = [:], recordNames: [String] = []
    ) {
        self.traceID = traceID
        self.spanID = spanID
        self.parentSpanID = parentSpanID
        self.name = name
        self.source = source
        self.startMicros = startMicros
        self.endMicros = endMicros
        self.status = status
        self.errorCode = errorCode
        self.message = message
        self.attributes = attributes
        self.recordNames = Array(recordNames.prefix(Self.maxRecordNames))
    }

    /// The attributes as stored (JSON text, keys sorted), written without a `JSON` tree: it is
    /// done for every traced request.
    package var attributesJSON: String {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        Self.writeAttributes(attributes, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    package var recordNamesJSON: String {
        guard !recordNames.isEmpty else { return "[]" }
        var out: [UInt8] = []
        out.reserveCapacity(recordNames.count * 24)
        out.append(UInt8(ascii: "["))
        for (offset, name) in recordNames.enumerated() {
            if offset > 0 { out.append(UInt8(ascii: ",")) }
            JSON.writeString(name, into: &out)
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `attributes` as a JSON object, keys sorted.
    package static func writeAttributes(_ attributes: [String: String], into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        for (offset, member) in attributes.sorted(by: { $0.key < $1.key }).enumerated() {
            if offset > 0 { out.append(UInt8(ascii: ",")) }
            JSON.writeString(member.key, into: &out)
            out.append(UInt8(ascii: ":"))
            JSON.writeString(member.value, into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    package static func attributes(fromJSON text: String) -> [String: String] {
        guard let object = (try? JSON.parse(Array(text.utf8)))?.object else { return [:] }
        return object.compactMapValues(\.string)
    }

    package static func recordNames(fromJSON text: String) -> [String] {
        ((try? JSON.parse(Array(text.utf8)))?.array ?? []).compactMap(\.string)
    }
}
