import Foundation

/// Carries the SDK's HTTP requests. The default is ``HTTPClientTransport``; supply your own
/// to route requests through another HTTP stack, straight into an in-process server, or to
/// a test double.
///
/// A transport:
/// - returns every HTTP response, whatever its status (the SDK maps error statuses);
/// - throws a ``NimbusError`` with ``NimbusError/Code/networkUnavailable`` when the server
///   cannot be reached and ``NimbusError/Code/networkFailure`` when the exchange failed
///   part-way (other errors are reported as `networkFailure`);
/// - stops and throws `CancellationError` when the calling task is cancelled.
public protocol Transport: Sendable {
    func send(_ request: TransportRequest) async throws -> TransportResponse
}

/// One HTTP request.
public struct TransportRequest: Sendable, CustomStringConvertible {
    public enum Method: String, Sendable, Hashable {
        case get = "GET"
        case post = "POST"
        /// Nimbus's resumable asset uploads send chunks with `PUT`.
        case put = "PUT"
    }

    public var method: Method
    public var url: URL
    public var headers: [String: String]
    public var body: Data?
    public var timeout: Duration

    public init(method: Method, url: URL, headers: [String: String] = [:], body: Data? = nil, timeout: Duration = .seconds(60)) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }

    public var description: String { "\(method.rawValue) \(url.absoluteString)" }
}

/// One HTTP response.
public struct TransportResponse: Sendable {
    public var status: Int
    /// Header names in lower case.
    public var headers: [String: String]
    public var body: Data

    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { _, last in last })
        self.body = body
    }
}
