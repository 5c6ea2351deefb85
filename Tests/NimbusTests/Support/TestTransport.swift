import Foundation
import Nimbus
import NimbusProtocol
import NimbusTestSupport

/// A transport double: records every request and answers with a handler.
final class TestTransport: Transport, Sendable {
    typealias Handler = @Sendable (TransportRequest) async throws -> TransportResponse

    private let handler: Handler
    private let log = Locked<[TransportRequest]>([])

    init(_ handler: @escaping Handler) {
        self.handler = handler
    }

    /// Answers each request with the next of `responses` (the last one repeats).
    convenience init(responses: [TransportResponse]) {
        let queue = Locked(responses)
        self.init { _ in
            queue.withLock { queue in queue.count > 1 ? queue.removeFirst() : queue[0] }
        }
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        log.withLock { $0.append(request) }
        return try await handler(request)
    }

    var requests: [TransportRequest] { log.withLock { $0 } }

    /// The JSON bodies of the requests so far.
    var bodies: [JSON] { requests.compactMap { $0.body.flatMap { try? JSON.parse(Array($0)) } } }

    /// The operation (last path components after the scope) of each request.
    var operations: [String] {
        requests.map { $0.url.pathComponents.suffix(2).joined(separator: "/") }
    }
}

/// A transport whose requests never answer until cancelled; reports each start.
final class HangingTransport: Transport, Sendable {
    let started: AsyncStream<Void>
    private let startedContinuation: AsyncStream<Void>.Continuation
    let cancelled: AsyncStream<Void>
    private let cancelledContinuation: AsyncStream<Void>.Continuation

    init() {
        (started, startedContinuation) = AsyncStream<Void>.makeStream()
        (cancelled, cancelledContinuation) = AsyncStream<Void>.makeStream()
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        startedContinuation.yield()
        do {
            // Not a wait for an event: this request must never answer on its own.
            try await Task.sleep(for: .seconds(3600))
        } catch {
            cancelledContinuation.yield()
            throw CancellationError()
        }
        return TransportResponse(status: 500)
    }
}

/// A value guarded by a lock, for test doubles and recorders.
final class Locked<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is only touched inside `withLock`, which holds `lock`.
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

extension TransportResponse {
    /// A JSON response.
    static func json(_ json: JSON, status: Int = 200, headers: [String: String] = [:]) -> TransportResponse {
        TransportResponse(status: status, headers: headers, body: Data(json.serializedBytes()))
    }

    /// A CloudKit error response with the HTTP status of its code.
    static func error(_ code: ServerErrorCode, _ reason: String = "test", retryAfter: Int? = nil) -> TransportResponse {
        .json(CloudKitError(code, reason, retryAfter: retryAfter).wireJSON(uuid: "u-1"), status: code.httpStatus)
    }
}

/// A container pointed at a test transport.
func makeContainer(
    _ transport: any Transport, credentials: Credentials = .apiToken("api+/=token", webAuthToken: "web token"),
    baseURL: String = "http://nimbus.test"
) -> Container {
    Container(
        identifier: "iCloud.com.example.reader", environment: .development, baseURL: URL(string: baseURL)!,
        credentials: credentials, deviceID: "device-A", transport: transport)
}

/// A record dictionary as the server returns it.
func serverRecordJSON(
    _ name: String, type: String = "Bookmark", tag: String = "t1", fields: [String: FieldValue] = [:],
    zone: String? = nil
) -> JSON {
    var record = NimbusProtocol.Record(
        recordName: name, recordType: type, recordChangeTag: tag, fields: fields,
        created: RecordStamp(timestamp: 1_700_000_000_000, userRecordName: "_u1", deviceID: "device-B"),
        modified: RecordStamp(timestamp: 1_700_000_001_000, userRecordName: "_u1", deviceID: "device-B"))
    record.zoneID = zone.map { ZoneID(zoneName: $0, ownerRecordName: "_u1") }
    return record.wireJSON()
}

/// A CloudKit error dictionary, as the server puts it in a response or in `records[]`.
func wireError(_ code: ServerErrorCode, _ reason: String = "test", recordName: String? = nil) -> JSON {
    CloudKitError(code, reason, recordName: recordName).wireJSON(uuid: "u")
}
