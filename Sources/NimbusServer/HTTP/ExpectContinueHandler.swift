import NIOCore
import NIOHTTP1

/// Answers `Expect: 100-continue` (RFC 9110 §10.1.1): a client that sends it waits for
/// `100 Continue` before sending its body, or for the final answer instead.
///
/// The request's route decides which: reading the body sends ``Proceed`` down the pipeline
/// (``ExpectContinueMiddleware``), which writes `100 Continue` once; a route that refuses the
/// request first (authentication, quota, size) writes its final answer without one, and the
/// client never sends the body. A client that sends the body without waiting (curl does after
/// a second) gets no `100 Continue` either: it is no longer needed.
///
/// It sits right after ``HTTPConnectionGuard``, on the HTTP/1 parts; an upgrade to a push
/// WebSocket removes it.
final class ExpectContinueHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Its name in the pipeline.
    static let name = "nimbus.expect-continue"

    /// The event a route sends (as a user outbound event) when it starts reading the body.
    struct Proceed: Sendable {}

    /// The request being read asked for `100 Continue`, and has had neither that, nor its
    /// final answer, nor sent body bytes.
    private var awaitingContinue = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            awaitingContinue = Self.expectsContinue(head)
        case .body, .end:
            awaitingContinue = false
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .head(let head) = unwrapOutboundIn(data), head.status.code >= 200 { awaitingContinue = false }
        context.write(data, promise: promise)
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard event is Proceed else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        guard awaitingContinue else {
            promise?.succeed()
            return
        }
        awaitingContinue = false
        context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .continue))), promise: promise)
    }

    /// An HTTP/1.1 request with `Expect: 100-continue` (case-insensitive, as the RFC says);
    /// HTTP/1.0 clients are not sent 1xx answers.
    static func expectsContinue(_ head: HTTPRequestHead) -> Bool {
        guard head.version.major == 1, head.version.minor >= 1 else { return false }
        return head.headers[canonicalForm: "expect"].contains { $0.lowercased() == "100-continue" }
    }
}
