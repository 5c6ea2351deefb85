import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NimbusProtocol

/// The default ``Transport``: AsyncHTTPClient (SwiftNIO), on Linux and Apple platforms.
public struct HTTPClientTransport: Transport {
    let client: HTTPClient

    /// - Parameter client: defaults to ``sharedClient``. Pass your own to configure TLS or
    ///   proxies (and shut it down yourself).
    public init(client: HTTPClient = HTTPClientTransport.sharedClient) {
        self.client = client
    }

    /// The SDK's process-wide client, never shut down. It closes connections idle for 50 s
    /// (before the server's 60 s) and does not retry failed connection attempts itself: an unreachable server is reported at once as
    /// ``NimbusError/Code/networkUnavailable``, and retrying is the caller's policy
    /// (``Retrier``, a sync engine's scheduler).
    public static let sharedClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        // Shorter than a Nimbus server keeps an idle connection (60 s), so the client drops it
        // first: with both at 60 s, a request sent on a connection idle for a minute could meet
        // the server closing it.
        configuration.connectionPool.idleTimeout = .seconds(50)
        configuration.timeout.connect = .seconds(10)
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var httpRequest = makeRequest(request)
        if let body = request.body { httpRequest.body = .bytes(ByteBuffer(bytes: body)) }
        do {
            let response = try await client.execute(httpRequest, timeout: Self.timeAmount(request.timeout))
            let body = try await response.body.collect(upTo: 64 << 20)
            return TransportResponse(status: Int(response.status.code), headers: Self.headers(response), body: Data(body.readableBytesView))
        } catch {
            throw Self.map(error)
        }
    }

    /// The request's method, URL and headers (without its body).
    func makeRequest(_ request: TransportRequest) -> HTTPClientRequest {
        var httpRequest = HTTPClientRequest(url: request.url.absoluteString)
        switch request.method {
        case .get: httpRequest.method = .GET
        case .post: httpRequest.method = .POST
        case .put: httpRequest.method = .PUT
        }
        for (name, value) in request.headers { httpRequest.headers.add(name: name, value: value) }
        return httpRequest
    }

    static func timeAmount(_ duration: Duration) -> TimeAmount {
        TimeAmount.nanoseconds(Int64(duration.components.seconds) * 1_000_000_000
            + duration.components.attoseconds / 1_000_000_000)
    }

    /// Header names in lower case.
    static func headers(_ response: HTTPClientResponse) -> [String: String] {
        var headers: [String: String] = [:]
        for header in response.headers { headers[header.name.lowercased()] = header.value }
        return headers
    }

    /// Sorts a client error into cancellation, "could not reach" and "failed part-way".
    static func map(_ error: any Error) -> any Error {
        if error is CancellationError || Task.isCancelled { return CancellationError() }
        if let clientError = error as? HTTPClientError {
            if clientError == .cancelled { return CancellationError() }
            if clientError == .connectTimeout {
                return NimbusError(.networkUnavailable, "could not connect to the server: \(clientError)")
            }
            return NimbusError(.networkFailure, "the request failed: \(clientError)")
        }
        if error is NIOConnectionError || error is ChannelError {
            return NimbusError(.networkUnavailable, "could not connect to the server: \(error)")
        }
        if let ioError = error as? IOError, [ECONNREFUSED, ENETUNREACH, EHOSTUNREACH].contains(ioError.errnoCode) {
            return NimbusError(.networkUnavailable, "could not connect to the server: \(error)")
        }
        return NimbusError(.networkFailure, "the request failed: \(error)")
    }
}
