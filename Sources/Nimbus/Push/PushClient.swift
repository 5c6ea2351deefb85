import Foundation
import NimbusProtocol

/// What happens on the push channel.
public enum PushEvent: Sendable {
    /// The channel is (again) connected. Pushes sent while it was down are not replayed, so
    /// a sync client fetches changes now. (A server that refuses the credentials accepts the
    /// connection and closes it at once: then ``disconnected(_:reconnectingIn:)`` follows
    /// with ``NimbusError/Code/notAuthenticated``.)
    case connected
    /// A push arrived.
    case notification(PushNotification)
    /// The channel dropped. `reconnectingIn` is the wait before the next attempt, or `nil`
    /// when the client gave up (credentials refused, or the policy's attempts used up).
    case disconnected(NimbusError, reconnectingIn: Duration?)
}

/// Receives the server's push notifications over its WebSocket channel
/// (`{base}/push/{container}/{environment}?…&deviceID=…`), reconnecting with backoff.
///
/// ```swift
/// let push = PushClient(container: container)
/// for await event in push.events() {
///     switch event {
///     case .connected, .notification: await engine.fetchChanges()
///     case .disconnected(let error, _): log(error)
///     }
/// }
/// ```
///
/// The connection lives as long as something iterates the sequence; ending the iteration
/// (or cancelling its task) closes it. The container's ``Container/deviceID`` identifies
/// this device, so the server does not push back changes this device made.
public struct PushClient: Sendable {
    public let container: Container
    /// Backoff between reconnection attempts. `maxAttempts` counts consecutive failed
    /// attempts before giving up; the default never gives up.
    public var reconnectPolicy: RetryPolicy
    private let transport: any PushTransport
    private let sleep: @Sendable (Duration) async throws -> Void
    private let random: @Sendable () -> Double

    /// Waits from 0.25 s doubling to 30 s, never giving up.
    public static let defaultReconnectPolicy = RetryPolicy(
        maxAttempts: .max, initialBackoff: .milliseconds(250), maximumBackoff: .seconds(30))

    /// - Parameters:
    ///   - container: whose user's pushes to receive.
    ///   - reconnectPolicy: the backoff between reconnection attempts.
    ///   - transport: defaults to ``WebSocketPushTransport``.
    ///   - sleep: how to wait between attempts (injectable for tests).
    ///   - random: jitter source, numbers in `0..<1`.
    public init(
        container: Container, reconnectPolicy: RetryPolicy = PushClient.defaultReconnectPolicy,
        transport: (any PushTransport)? = nil,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.container = container
        self.reconnectPolicy = reconnectPolicy
        self.transport = transport ?? WebSocketPushTransport()
        self.sleep = sleep
        self.random = random
    }

    /// The push channel URL: `ws(s)://host/push/{container}/{environment}` with the
    /// credentials and the device ID as query parameters.
    public var url: URL {
        var components = URLComponents(url: container.baseURL, resolvingAgainstBaseURL: false) ?? URLComponents()
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        var basePath = components.percentEncodedPath
        while basePath.hasSuffix("/") { basePath.removeLast() }
        components.percentEncodedPath =
            basePath + Database.percentEncodedPath("/push/\(container.identifier)/\(container.environment.rawValue)")
        let items = container.credentials.queryItems + [URLQueryItem(name: "deviceID", value: container.deviceID)]
        components.percentEncodedQuery = items.map {
            "\($0.name)=\(Database.percentEncodedQueryValue($0.value ?? ""))"
        }.joined(separator: "&")
        return components.url ?? container.baseURL
    }

    /// The channel's events: connections, pushes, disconnections.
    public func events() -> AsyncStream<PushEvent> {
        let (stream, continuation) = AsyncStream<PushEvent>.makeStream()
        let task = Task { [self] in
            await self.run(continuation)
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Only the pushes.
    public func notifications() -> AsyncStream<PushNotification> {
        let events = events()
        let (stream, continuation) = AsyncStream<PushNotification>.makeStream()
        let task = Task {
            for await event in events {
                if case .notification(let notification) = event { continuation.yield(notification) }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    private func run(_ continuation: AsyncStream<PushEvent>.Continuation) async {
        let url = url
        let headers = ["X-Nimbus-Device-ID": container.deviceID]
        var failures = 0
        while !Task.isCancelled {
            let opened = Locked(false)
            var failure: NimbusError
            do {
                try await transport.connect(
                    url: url, headers: headers,
                    onOpen: {
                        opened.withLock { $0 = true }
                        continuation.yield(.connected)
                    },
                    onMessage: { text in
                        if let notification = try? PushNotification(payload: Data(text.utf8)) {
                            continuation.yield(.notification(notification))
                        }
                    })
                failure = NimbusError(.networkFailure, "the server closed the push connection")
            } catch let error as NimbusError {
                failure = error
            } catch {
                failure = NimbusError(.networkFailure, "the push connection failed: \(error)")
            }
            if Task.isCancelled { return }
            failures = opened.current ? 1 : failures + 1
            let refused = failure.code == .notAuthenticated || failure.code == .permissionFailure
            if refused || failures >= reconnectPolicy.maxAttempts {
                continuation.yield(.disconnected(failure, reconnectingIn: nil))
                return
            }
            let delay = reconnectPolicy.delay(afterFailure: failures, error: failure, random: random())
            continuation.yield(.disconnected(failure, reconnectingIn: delay))
            do { try await sleep(delay) } catch { return }
        }
    }
}
