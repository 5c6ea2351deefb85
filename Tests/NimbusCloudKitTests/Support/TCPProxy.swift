import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP proxy on an ephemeral loopback port in front of a server's port, which a test can
/// cut (every connection through it closed, new ones refused: the network is down) and
/// restore. Clients pointed at ``port`` see a real network drop, not a server restart.
final class TCPProxy: Sendable {
    let port: Int
    private let listener: any Channel
    private let state: NIOLockedValueBox<State>

    private struct State {
        var open = true
        var connections: [any Channel] = []
    }

    private struct Refused: Error {}

    private init(port: Int, listener: any Channel, state: NIOLockedValueBox<State>) {
        self.port = port
        self.listener = listener
        self.state = state
    }

    /// Runs `body` with a proxy to `targetPort` on 127.0.0.1, then stops the proxy.
    static func with<T>(to targetPort: Int, _ body: (TCPProxy) async throws -> T) async throws -> T {
        let state = NIOLockedValueBox(State())
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { inbound in
                // A refused connection is closed by the bootstrap as soon as it is accepted.
                guard state.withLockedValue({ $0.open }) else { return inbound.eventLoop.makeFailedFuture(Refused()) }
                return ClientBootstrap(group: inbound.eventLoop)
                    .connect(host: "127.0.0.1", port: targetPort)
                    .flatMapThrowing { outbound in
                        let (toServer, toClient) = Glue.pair()
                        try inbound.pipeline.syncOperations.addHandler(toServer)
                        try outbound.pipeline.syncOperations.addHandler(toClient)
                        let open = state.withLockedValue { state -> Bool in
                            if state.open { state.connections += [inbound, outbound] }
                            return state.open
                        }
                        if !open { outbound.close(promise: nil) }
                        guard open else { throw Refused() }
                    }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let proxy = TCPProxy(port: listener.localAddress?.port ?? 0, listener: listener, state: state)
        do {
            let result = try await body(proxy)
            await proxy.stop()
            return result
        } catch {
            await proxy.stop()
            throw error
        }
    }

    /// Closes every connection through the proxy and refuses new ones until ``restore()``.
    func cut() {
        let connections = state.withLockedValue { state -> [any Channel] in
            state.open = false
            defer { state.connections = [] }
            return state.connections
        }
        for connection in connections { connection.close(promise: nil) }
    }

    /// Accepts connections again.
    func restore() {
        state.withLockedValue { $0.open = true }
    }

    private func stop() async {
        cut()
        try? await listener.close()
    }
}

/// Copies the bytes one channel reads to its partner (both on one event loop), and closes
/// the partner when its own channel closes.
private final class Glue: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var partner: Glue?
    private var context: ChannelHandlerContext?

    static func pair() -> (Glue, Glue) {
        let first = Glue()
        let second = Glue()
        first.partner = second
        second.partner = first
        return (first, second)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner?.context?.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        partner?.context?.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.context?.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
