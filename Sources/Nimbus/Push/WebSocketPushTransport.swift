import Foundation
import HTTPTypes
import Logging
import NIOWebSocket
import NimbusProtocol
import WSClient

/// The default ``PushTransport``: a WebSocket (swift-websocket), with pings to keep idle
/// connections alive through proxies.
public struct WebSocketPushTransport: PushTransport {
    /// How often to ping an idle connection.
    public var pingInterval: Duration
    /// The largest message accepted.
    public var maxMessageSize: Int

    public init(pingInterval: Duration = .seconds(30), maxMessageSize: Int = 1 << 20) {
        self.pingInterval = pingInterval
        self.maxMessageSize = maxMessageSize
    }

    public func connect(
        url: URL, headers: [String: String], onOpen: @escaping @Sendable () async -> Void,
        onMessage: @escaping @Sendable (String) async -> Void
    ) async throws {
        var configuration = WebSocketClientConfiguration()
        configuration.autoPing = .enabled(timePeriod: pingInterval)
        var fields = HTTPFields()
        for (name, value) in headers {
            if let fieldName = HTTPField.Name(name) { fields[fieldName] = value }
        }
        configuration.additionalHeaders = fields
        let maxSize = maxMessageSize
        let closeFrame: WebSocketCloseFrame?
        do {
            closeFrame = try await WebSocketClient.connect(
                url: url.absoluteString, configuration: configuration, logger: Logger(label: "nimbus.push")
            ) { inbound, _, _ in
                await onOpen()
                for try await message in inbound.messages(maxSize: maxSize) {
                    if case .text(let text) = message { await onMessage(text) }
                }
            }
        } catch let error as WebSocketClientError {
            if Task.isCancelled { throw CancellationError() }
            throw NimbusError(.networkFailure, "the push connection failed: \(error)")
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw HTTPClientTransport.map(error)
        }
        if let closeFrame, closeFrame.closeCode == .policyViolation {
            throw NimbusError(.notAuthenticated, "the server refused the push connection: \(closeFrame.reason ?? "policy violation")")
        }
    }
}
