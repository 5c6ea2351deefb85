import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NimbusProtocol

/// A plain TCP connection to a server under test, for what HTTP clients never do: send half
/// a header, announce a body and not send it, hold a connection idle, send bytes no parser
/// would. Bytes the server sends are collected; waits end as soon as the awaited bytes (or the
/// close) arrive, or fail after their timeout.
final class RawConnection: Sendable {
    private let channel: any Channel
    private let state: NIOLockedValueBox<State>

    struct State {
        var received: [UInt8] = []
        var closed = false
        var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]
    }

    /// What the server sent so far, and whether it closed the connection.
    struct Snapshot: Sendable {
        var received: [UInt8]
        var closed: Bool
        var text: String { String(decoding: received, as: UTF8.self) }
        /// The status code of the first response, if its status line arrived.
        var status: Int? {
            let line = text.prefix(while: { $0 != "\r" })
            let parts = line.split(separator: " ")
            return parts.count >= 2 ? Int(parts[1]) : nil
        }
        /// A complete response head arrived.
        var hasHead: Bool { text.contains("\r\n\r\n") }
        /// The body of the first response, parsed (when it is JSON).
        var json: JSON? {
            guard let end = text.range(of: "\r\n\r\n") else { return nil }
            return try? JSON.parse(Array(text[end.upperBound...].utf8))
        }
        /// The value of a header of the first response.
        func header(_ name: String) -> String? {
            guard let end = text.range(of: "\r\n\r\n") else { return nil }
            let prefix = name.lowercased() + ":"
            return text[..<end.lowerBound].split(separator: "\r\n").first { $0.lowercased().hasPrefix(prefix) }
                .map { $0.dropFirst(prefix.count).trimmingCharacters(in: .whitespaces) }
        }
    }

    private init(channel: any Channel, state: NIOLockedValueBox<State>) {
        self.channel = channel
        self.state = state
    }

    static func open(port: Int, host: String = "127.0.0.1") async throws -> RawConnection {
        let state = NIOLockedValueBox(State())
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Collector(state: state))
                }
            }
            .connect(host: host, port: port).get()
        return RawConnection(channel: channel, state: state)
    }

    /// Writes bytes as they are.
    func send(_ text: String) async throws {
        try await send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(ByteBuffer(bytes: bytes))
    }

    /// Closes the sending side only (TCP half-close): the server sees the end of the stream
    /// and can still answer.
    func finishSending() async throws {
        try await channel.close(mode: .output)
    }

    var snapshot: Snapshot {
        state.withLockedValue { Snapshot(received: $0.received, closed: $0.closed) }
    }

    /// Waits until `condition` holds for what arrived, or fails after `timeout`.
    @discardableResult
    func wait(
        for what: String, timeout: Duration = .seconds(10), until condition: @escaping @Sendable (Snapshot) -> Bool
    ) async throws -> Snapshot {
        let deadline = ContinuousClock.now + timeout
        while true {
            let current = snapshot
            if condition(current) { return current }
            if current.closed {
                throw TestTimeout("the connection closed before \(what); received: \(current.text.prefix(300))")
            }
            guard ContinuousClock.now < deadline else {
                throw TestTimeout("no \(what) within \(timeout); received: \(current.text.prefix(300))")
            }
            await nextEvent(after: current.received.count, before: deadline)
        }
    }

    /// Waits until the server closes the connection.
    @discardableResult
    func waitForClose(timeout: Duration = .seconds(10)) async throws -> Snapshot {
        try await wait(for: "the server to close the connection", timeout: timeout) { $0.closed }
    }

    /// Waits until a complete response head arrived (and, with `Content-Length`, its body).
    @discardableResult
    func waitForResponse(timeout: Duration = .seconds(10)) async throws -> Snapshot {
        try await wait(for: "a response", timeout: timeout) { snapshot in
            guard let end = snapshot.text.range(of: "\r\n\r\n") else { return false }
            let head = snapshot.text[..<end.lowerBound].lowercased()
            guard let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
                let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
            else { return true }
            return snapshot.text.utf8.count - snapshot.text[..<end.upperBound].utf8.count >= length
        }
    }

    /// Resumes when more than `seen` bytes arrived, the connection closed, or the deadline passed.
    private func nextEvent(after seen: Int, before deadline: ContinuousClock.Instant) async {
        let id = UUID()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let ready = self.state.withLockedValue { state -> Bool in
                        if state.closed || state.received.count != seen { return true }
                        state.waiters[id] = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            }
            group.addTask {
                try? await Task.sleep(until: deadline, clock: .continuous)
                self.state.withLockedValue { $0.waiters.removeValue(forKey: id) }?.resume()
            }
            await group.next()
            group.cancelAll()
            // The waiter resumed by an event: end the deadline task too.
            self.state.withLockedValue { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    func close() async {
        try? await channel.close()
    }

    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let state: NIOLockedValueBox<State>

        init(state: NIOLockedValueBox<State>) { self.state = state }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            let waiters = state.withLockedValue { state in
                state.received.append(contentsOf: buffer.readableBytesView)
                defer { state.waiters = [:] }
                return Array(state.waiters.values)
            }
            for waiter in waiters { waiter.resume() }
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            // The server closed its side: as good as closed for these tests.
            if let event = event as? ChannelEvent, case .inputClosed = event { markClosed() }
            context.fireUserInboundEventTriggered(event)
        }

        func channelInactive(context: ChannelHandlerContext) {
            markClosed()
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }

        private func markClosed() {
            let waiters = state.withLockedValue { state in
                state.closed = true
                defer { state.waiters = [:] }
                return Array(state.waiters.values)
            }
            for waiter in waiters { waiter.resume() }
        }
    }
}
