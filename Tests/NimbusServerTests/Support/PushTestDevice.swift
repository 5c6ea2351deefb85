import Foundation
import Logging
import NIOCore
import NIOWebSocket
import NimbusProtocol
import NimbusTestSupport
import WSClient

/// A device on the push channel: a real WebSocket client (swift-websocket) connected to
/// `/push/{container}/{environment}` that collects the pushes it receives.
///
/// `connect` returns once the server has accepted the connection (the device is then
/// registered: every later commit is pushed to it). Waits are bounded by timeouts; they
/// return as soon as the awaited event happens.
final class PushTestDevice: Sendable {
    let deviceID: String
    private let box: Inbox
    private let task: Task<WebSocketCloseFrame?, any Error>

    private init(deviceID: String, inbox: Inbox, task: Task<WebSocketCloseFrame?, any Error>) {
        self.deviceID = deviceID
        self.box = inbox
        self.task = task
    }

    /// Connects as `client`'s user with the given device ID.
    ///
    /// The wait ends as soon as the server accepts; its bound is generous because under the
    /// whole suite's load an upgrade has taken over 10 s (a passing run never waits for it).
    static func connect(
        _ client: TestClient, deviceID: String?, query: String? = nil, timeout: Duration = .seconds(60)
    ) async throws -> PushTestDevice {
        let url = pushURL(client, deviceID: deviceID, query: query)
        let inbox = Inbox()
        let task = Task {
            try await WebSocketClient.connect(
                url: url, configuration: WebSocketClientConfiguration(maxFrameSize: 1 << 16, autoPing: .disabled),
                logger: Logger(label: "push-test-device")
            ) { inbound, _, _ in
                await inbox.opened()
                for try await message in inbound.messages(maxSize: 4 << 20) {
                    if case .text(let text) = message { await inbox.append(text) }
                }
            }
        }
        try await inbox.waitUntilOpen(timeout: timeout, failure: task)
        return PushTestDevice(deviceID: deviceID ?? "", inbox: inbox, task: task)
    }

    static func pushURL(_ client: TestClient, deviceID: String?, query: String? = nil) -> String {
        var items: [String] = []
        if let apiToken = client.apiToken { items.append("ckAPIToken=\(apiToken)") }
        if let webAuthToken = client.webAuthToken { items.append("ckWebAuthToken=\(webAuthToken)") }
        if let deviceID { items.append("deviceID=\(deviceID)") }
        if let query { items.append(query) }
        let base = client.baseURL.replacingOccurrences(of: "http://", with: "ws://")
        return "\(base)/push/\(client.container)/\(client.environment)?\(items.joined(separator: "&"))"
    }

    /// The next push, parsed.
    func next(timeout: Duration = .seconds(60)) async throws -> JSON {
        let text = try await box.next(timeout: timeout)
        return try JSON.parse(text)
    }

    /// Pushes received and not yet taken by `next`.
    var pending: Int { get async { await box.count } }

    /// Waits until the server closes the connection; returns its close frame.
    func closed(timeout: Duration = .seconds(60)) async throws -> WebSocketCloseFrame? {
        try await withThrowingTaskGroup(of: WebSocketCloseFrame?.self) { group in
            group.addTask { try await self.task.value }
            group.addTask {
                try await Task.sleep(for: timeout)
                self.task.cancel()
                throw TestTimeout("the server did not close the push connection within \(timeout)")
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    /// Closes the connection from the client side.
    func disconnect() async {
        task.cancel()
        _ = try? await task.value
    }
}

struct TestTimeout: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Messages received, and the waiters for the next one.
actor Inbox {
    private var messages: [String] = []
    private var waiter: (id: UUID, continuation: CheckedContinuation<String, any Error>)?
    private var isOpen = false
    private var openWaiter: CheckedContinuation<Void, any Error>?

    var count: Int { messages.count }

    func opened() {
        isOpen = true
        openWaiter?.resume()
        openWaiter = nil
    }

    func waitUntilOpen(timeout: Duration, failure task: Task<WebSocketCloseFrame?, any Error>) async throws {
        if isOpen { return }
        let deadline = Task {
            try? await Task.sleep(for: timeout)
            self.failOpen(TestTimeout("the push connection did not open within \(timeout)"))
        }
        let ended = Task {
            do {
                _ = try await task.value
                self.failOpen(TestTimeout("the push connection ended before it opened"))
            } catch {
                self.failOpen(error)
            }
        }
        defer {
            deadline.cancel()
            ended.cancel()
        }
        try await withCheckedThrowingContinuation { continuation in
            if isOpen { continuation.resume() } else { openWaiter = continuation }
        }
    }

    private func failOpen(_ error: any Error) {
        guard !isOpen else { return }
        openWaiter?.resume(throwing: error)
        openWaiter = nil
    }

    func append(_ text: String) {
        if let waiter {
            self.waiter = nil
            waiter.continuation.resume(returning: text)
        } else {
            messages.append(text)
        }
    }

    func next(timeout: Duration) async throws -> String {
        if !messages.isEmpty { return messages.removeFirst() }
        let id = UUID()
        let deadline = Task {
            try? await Task.sleep(for: timeout)
            self.expire(id, timeout: timeout)
        }
        defer { deadline.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            waiter = (id, continuation)
        }
    }

    private func expire(_ id: UUID, timeout: Duration) {
        guard let waiter, waiter.id == id else { return }
        self.waiter = nil
        waiter.continuation.resume(throwing: TestTimeout("no push arrived within \(timeout)"))
    }
}
