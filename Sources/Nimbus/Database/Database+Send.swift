import Foundation
import Instrumentation
import NimbusProtocol

extension Database {
    /// Sends one CloudKit Web Services request and returns the parsed response body.
    ///
    /// - Parameter zoneID: the zone the request is about, for placing IDs in errors.
    func send(
        _ operation: String, method: TransportRequest.Method = .post, body: JSON?, zoneID: ZoneID? = nil
    ) async throws -> JSON {
        try Self.parse(try await sendForBody(operation, method: method, body: body, zoneID: zoneID))
    }

    /// A response body as JSON.
    static func parse(_ body: Data) throws -> JSON {
        do {
            return try JSON.parse(body)
        } catch {
            throw NimbusError.malformedResponse("\(error)")
        }
    }

    /// Sends one request and returns the body of its successful response, unparsed.
    func sendForBody(
        _ operation: String, method: TransportRequest.Method = .post, body: JSON?, zoneID: ZoneID? = nil
    ) async throws -> Data {
        if Task.isCancelled { throw NimbusError.cancelled() }
        let request = try makeRequest(operation, method: method, body: body)
        let response: TransportResponse
        do {
            response = try await container.transport.send(request)
        } catch let error as NimbusError {
            throw Task.isCancelled ? NimbusError.cancelled() : error
        } catch {
            if error is CancellationError || Task.isCancelled { throw NimbusError.cancelled() }
            throw NimbusError(.networkFailure, "the request failed: \(error)")
        }
        if Task.isCancelled { throw NimbusError.cancelled() }
        guard (200..<300).contains(response.status) else {
            throw NimbusError(httpStatus: response.status, body: response.body, headers: response.headers, zoneID: zoneID)
        }
        return response.body
    }

    func makeRequest(_ operation: String, method: TransportRequest.Method, body: JSON?) throws -> TransportRequest {
        let bodyData = body.map { Data($0.serializedBytes()) }
        guard var components = URLComponents(url: container.baseURL, resolvingAgainstBaseURL: false) else {
            throw NimbusError(.invalidArguments, "the base URL \(container.baseURL) is not a valid URL")
        }
        var basePath = components.percentEncodedPath
        while basePath.hasSuffix("/") { basePath.removeLast() }
        components.percentEncodedPath = basePath + Self.percentEncodedPath(subpath(operation))
        let query = container.credentials.queryItems.map { "\($0.name)=\(Self.percentEncodedQueryValue($0.value ?? ""))" }
        components.percentEncodedQuery = query.isEmpty ? nil : query.joined(separator: "&")
        guard let url = components.url else {
            throw NimbusError(.invalidArguments, "cannot build a request URL from \(container.baseURL)")
        }
        var headers = ["X-Nimbus-Device-ID": container.deviceID, "Accept": "application/json"]
        if bodyData != nil { headers["Content-Type"] = "application/json; charset=utf-8" }
        // Each request of a traced task is a new span of its trace.
        if let trace = RequestTrace.current {
            headers["traceparent"] = trace.child().traceParent
        } else if let context = ServiceContext.current {
            // An app that traces with swift-distributed-tracing (and a W3C instrument, such as
            // swift-otel's) has its own trace continue through Nimbus.
            InstrumentationSystem.instrument.inject(context, into: &headers, using: HeaderInjector())
        }
        let signature = try container.credentials.signatureHeaders(
            body: bodyData ?? Data(), subpath: components.percentEncodedPath, date: container.now())
        headers.merge(signature) { _, new in new }
        return TransportRequest(method: method, url: url, headers: headers, body: bodyData, timeout: container.requestTimeout)
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// A byte of `unreserved`.
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    static func percentEncodedQueryValue(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value
    }

    package static func percentEncodedPath(_ path: String) -> String {
        // Most paths need no escape (every request of a sync builds one): checked byte by byte,
        // which is far cheaper than Foundation's character-set encoding of each segment.
        if path.utf8.allSatisfy({ isUnreserved($0) || $0 == UInt8(ascii: "/") }) { return path }
        return path.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.addingPercentEncoding(withAllowedCharacters: unreserved) ?? String($0) }
            .joined(separator: "/")
    }
}

/// Writes an instrument's propagation headers into a request's headers.
struct HeaderInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key] = value
    }
}
