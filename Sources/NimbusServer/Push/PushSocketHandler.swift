import NIOCore
import NIOWebSocket

/// The server side of one push WebSocket, on its event loop, without a task: it answers
/// pings and the close handshake, notes pongs (the heartbeat), and ignores what else a client
/// sends. Pushes are written to the channel by ``PushConnection``.
///
/// A refused connection is sent its close frame (code and reason) and closed when the client
/// answers, or after 10 s. The close frame is never followed at once by the end of the
/// stream: a client still installing its WebSocket handlers right after the upgrade response
/// can miss that event and hang (seen with swift-websocket 1.6), while it never misses a frame.
final class PushSocketHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    enum Role {
        case accepted(PushConnection)
        case refused(WebSocketErrorCode, reason: String)
    }

    private let role: Role
    private var closeSent = false

    init(_ role: Role) {
        self.role = role
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // The server's channels read on demand (for its async HTTP handling); this one reads
        // whatever comes: pongs, pings and the close handshake.
        context.channel.setOption(ChannelOptions.autoRead, value: true).whenFailure { _ in }
        context.read()
        switch role {
        case .accepted(let connection):
            do {
                connection.open(below: try context.pipeline.syncOperations.context(handlerType: WebSocketFrameEncoder.self))
            } catch {
                context.close(promise: nil)
            }
        case .refused(let code, let reason):
            closeSent = true
            var data = context.channel.allocator.buffer(capacity: 2 + reason.utf8.count)
            data.write(webSocketErrorCode: code)
            data.writeString(reason)
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)), promise: nil)
            let channel = context.channel
            context.eventLoop.scheduleTask(in: .seconds(10)) { channel.close(promise: nil) }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .connectionClose:
            let channel = context.channel
            guard !closeSent else {
                channel.close(promise: nil)
                return
            }
            closeSent = true
            // Echo the client's status code, then close.
            var received = frame.unmaskedData
            var reply = context.channel.allocator.buffer(capacity: 2)
            reply.write(webSocketErrorCode: received.readWebSocketErrorCode() ?? .normalClosure)
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: reply)))
                .whenComplete { _ in channel.close(promise: nil) }
        case .ping:
            guard frame.fin, !closeSent else { return }
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .pong:
            if case .accepted(let connection) = role { connection.pongReceived() }
        case .text, .binary, .continuation:
            // Clients have nothing to say on the push channel.
            break
        default:
            closeSent = true
            var reply = context.channel.allocator.buffer(capacity: 2)
            reply.write(webSocketErrorCode: .protocolError)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: reply)))
                .whenComplete { _ in channel.close(promise: nil) }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The server allows half-closed connections (for HTTP); a push client that closed its
        // side is gone.
        if let event = event as? ChannelEvent, case .inputClosed = event {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Protocol errors were answered with a close frame by WebSocketProtocolErrorHandler;
        // anything else (a reset connection) just ends it.
        if !(error is NIOWebSocketError) { context.close(promise: nil) }
    }
}
