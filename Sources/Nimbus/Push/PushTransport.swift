import Foundation

/// Carries the push channel: one long-lived connection that delivers text messages. The
/// default is ``WebSocketPushTransport``; tests and other stacks supply their own.
public protocol PushTransport: Sendable {
    /// Connects to `url`, calls `onOpen` once the connection is established, then
    /// `onMessage` for each text message, in order.
    ///
    /// Returns when the server closes the connection; throws when it cannot be established
    /// or fails (a ``NimbusError`` with ``NimbusError/Code/notAuthenticated`` when the server
    /// refused the credentials). Cancelling the calling task closes the connection.
    func connect(
        url: URL, headers: [String: String], onOpen: @escaping @Sendable () async -> Void,
        onMessage: @escaping @Sendable (String) async -> Void
    ) async throws
}
