import NIOCore
import NIOHTTP1

/// Closes HTTP connections that hold the server's resources without making progress (see
/// ``ConnectionSettings``): a request head that does not arrive within the header timeout, a
/// body the server asks for that stops coming, a keep-alive connection idle too long.
///
/// It sits right after the HTTP decoder, so it sees every request part and every response
/// part of the connection; an upgrade to a push WebSocket removes it.
///
/// It also ends connections whose request body was not read to its end when the response
/// was written (the server refused the body early): the response gets `Connection: close`,
/// and once it is written the connection is half-closed and reads are discarded for
/// ``ConnectionSettings/lingerTime`` before the close, so the client reads the answer
/// rather than a reset.
final class HTTPConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Its name in the pipeline.
    static let name = "nimbus.connection-guard"

    private let settings: ConnectionSettings
    private var state = State()
    private var timer: (task: Scheduled<Void>, at: NIODeadline)?

    init(settings: ConnectionSettings) {
        self.settings = settings
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.task.cancel()
        timer = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard !state.started else { return }
        state.started = true
        state.phaseDeadline = .now() + TimeAmount(settings.headerTimeout)
        arm(context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Lingering after an early answer: whatever still comes is dropped.
        guard !state.lingering && !state.rejected else { return }
        state.readPending = false
        state.bodyDeadline = nil
        switch unwrapInboundIn(data) {
        case .head(let head) where !Self.isServable(target: head.uri):
            reject(context)
            return
        case .head:
            state.readingRequest = true
            state.responding += 1
        case .body:
            break
        case .end:
            state.readingRequest = false
        }
        arm(context)
        context.fireChannelRead(data)
    }

    /// A request target the server can route: origin form (`/path?query`), absolute form
    /// (`http://host/path`) or `*`. Anything else (`?=`, `x`) is refused here: the HTTP types
    /// after this handler drop such a request without an answer, leaving the connection hanging.
    static func isServable(target: String) -> Bool {
        target.hasPrefix("/") || target == "*" || target.contains("://")
    }

    /// Answers `400` and ends the connection, without passing the request on.
    private func reject(_ context: ChannelHandlerContext) {
        state.rejected = true
        var headers = HTTPHeaders()
        headers.add(name: "Connection", value: "close")
        headers.add(name: "Content-Length", value: "0")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .badRequest, headers: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            self.state.rejected = false
            self.linger(context)
        }
    }

    func read(context: ChannelHandlerContext) {
        // The server asks for bytes: a body it waits for must make progress from now on.
        state.readPending = true
        if state.readingRequest && state.bodyDeadline == nil {
            state.bodyDeadline = .now() + TimeAmount(settings.bodyTimeout)
            arm(context)
        }
        context.read()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head) where head.status.code >= 200:
            let saysClose = head.headers[canonicalForm: "connection"].contains { $0.lowercased() == "close" }
            if state.readingRequest {
                // Answered before its body was read (a refused upload): the rest of the body
                // is never parsed, so no later request can be found in the stream. The
                // connection ends with this response, and says so.
                state.closeAfterResponse = true
                if !saysClose {
                    head.headers.replaceOrAdd(name: "Connection", value: "close")
                    context.write(wrapOutboundOut(.head(head)), promise: promise)
                    return
                }
            } else if saysClose {
                state.closeAfterResponse = true
            }
        case .end:
            state.responding = max(0, state.responding - 1)
            if state.closeAfterResponse {
                let written = promise ?? context.eventLoop.makePromise()
                context.writeAndFlush(data, promise: written)
                written.futureResult.assumeIsolated().whenComplete { _ in
                    self.linger(context)
                }
                return
            }
            if state.responding == 0 && !state.readingRequest {
                state.phaseDeadline = .now() + TimeAmount(settings.idleTimeout)
                arm(context)
            }
        default:
            break
        }
        context.write(data, promise: promise)
    }

    /// Half-closes the connection and drops what still arrives, until the client closes or
    /// the linger time passes.
    private func linger(_ context: ChannelHandlerContext) {
        guard !state.lingering, context.channel.isActive else { return }
        state.lingering = true
        state.bodyDeadline = nil
        state.phaseDeadline = .now() + TimeAmount(ConnectionSettings.lingerTime)
        arm(context)
        context.close(mode: .output, promise: nil)
        context.read()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if state.lingering {
            context.read()
            return
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, case .inputClosed = event {
            // The client sent all it will: with no request in progress nothing can follow.
            if state.lingering || (state.responding == 0 && !state.readingRequest) {
                context.close(promise: nil)
                return
            }
        }
        if event is ChannelShouldQuiesceEvent, state.responding == 0, !state.readingRequest {
            // The server is stopping: a connection between requests (or before its first) ends now.
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // While lingering the stream is the client's leftovers: no error there matters.
        if state.lingering {
            context.close(promise: nil)
            return
        }
        // A head the HTTP parser refuses (a request target such as `?=`) while no request is
        // in progress: nothing after this handler would answer it, so it does, and closes.
        if error is HTTPParserError, state.responding == 0, !state.rejected {
            reject(context)
            return
        }
        context.fireErrorCaught(error)
    }

    /// Schedules the timer for the state's deadline, unless it fires earlier anyway (then
    /// it looks again).
    private func arm(_ context: ChannelHandlerContext) {
        guard let deadline = state.deadline else { return }
        if let timer, timer.at <= deadline { return }
        timer?.task.cancel()
        let task = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            self.timer = nil
            self.fired(context)
        }
        timer = (task, deadline)
    }

    private func fired(_ context: ChannelHandlerContext) {
        guard let deadline = state.deadline else { return }
        if deadline <= .now() {
            context.close(promise: nil)
        } else {
            arm(context)
        }
    }
}

extension HTTPConnectionGuard {
    /// Where a guarded connection is, and the deadline that follows from it.
    struct State {
        var started = false
        /// Requests whose head arrived and whose response has not ended.
        var responding = 0
        /// A request's head arrived and its end not yet.
        var readingRequest = false
        /// The server asked for bytes and none came since.
        var readPending = false
        /// The response being written ends the connection.
        var closeAfterResponse = false
        /// Half-closed after an early answer, discarding reads.
        var lingering = false
        /// A request this handler refused is being answered; reads are discarded.
        var rejected = false
        /// When the head (of the first request, or the next one) or the linger must end.
        var phaseDeadline: NIODeadline?
        /// When a body the server asked for must have shown progress.
        var bodyDeadline: NIODeadline?

        /// When the connection is closed if nothing happens first.
        var deadline: NIODeadline? {
            if lingering { return phaseDeadline }
            if readingRequest { return readPending ? bodyDeadline : nil }
            // A request being answered is never timed out here (long polls, slow queries).
            if responding > 0 { return nil }
            return phaseDeadline
        }
    }
}
