import HTTPTypes
import Hummingbird
import NIOCore

/// Sends `100 Continue` for a request with `Expect: 100-continue` when its route starts
/// reading the body, never before: every check a route makes before it reads (authentication,
/// size, quota, throttling) answers with the final status instead, before the client sends
/// the body. See ``ExpectContinueHandler``, which writes it.
struct ExpectContinueMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext

    /// The connection of the requests being handled, bound by the HTTP channel.
    enum Connection {
        @TaskLocal static var channel: (any Channel)?
    }

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let channel = Connection.channel,
            request.headers[values: .expect].contains(where: { $0.lowercased() == "100-continue" })
        else { return try await next(request, context) }
        var request = request
        request.body = RequestBody(asyncSequence: ContinuingBody(base: request.body, channel: channel))
        return try await next(request, context)
    }

    /// The request body, asking for `100 Continue` before its first read.
    struct ContinuingBody: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let base: RequestBody
        let channel: any Channel

        struct AsyncIterator: AsyncIteratorProtocol {
            var base: RequestBody.AsyncIterator
            let channel: (any Channel)?
            var asked = false

            mutating func next() async throws -> ByteBuffer? {
                if !asked, let channel {
                    asked = true
                    try await channel.triggerUserOutboundEvent(ExpectContinueHandler.Proceed()).get()
                }
                return try await base.next()
            }
        }

        func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(base: base.makeAsyncIterator(), channel: channel)
        }
    }
}
