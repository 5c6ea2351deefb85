import Hummingbird
import Logging

/// Gives every request an ID (``RequestID``): the client's `X-Request-ID` when usable, a new
/// one otherwise. The ID goes on the request's logger (`request_id`, and Hummingbird's own
/// `hb.request.id` is set to the same value), into ``RequestID/current`` for error bodies,
/// and on the response, also when a route throws. At `debug`, one line per request: its
/// operation name (never the path or query, which may carry tokens), status and duration.
struct RequestIDMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    /// Makes the ID of a request that brings none (injected by tests).
    var makeID: @Sendable () -> String = RequestID.random

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let id = RequestID.accepting(request.headers[RequestID.header]) ?? makeID()
        var context = context
        context.logger[metadataKey: RequestID.metadataKey] = .string(id)
        context.logger[metadataKey: "hb.request.id"] = .string(id)
        let logger = context.logger
        let start = ContinuousClock.now
        var response = await RequestID.$current.withValue(id) {
            do {
                return try await next(request, context)
            } catch let error as any HTTPResponseError {
                return (try? error.response(from: request, context: context)) ?? Response(status: error.status)
            } catch {
                logger.error("request failed: \(String(describing: type(of: error)))")
                return Response(status: .internalServerError)
            }
        }
        response.headers[RequestID.header] = id
        if logger.logLevel <= .debug {
            let (seconds, attoseconds) = (ContinuousClock.now - start).components
            logger.debug(
                "request handled",
                metadata: [
                    "method": .string(request.method.rawValue),
                    "operation": .string(RequestStatisticsMiddleware.operation(ofPath: request.uri.path)),
                    "status": .stringConvertible(response.status.code),
                    "duration_ms": .stringConvertible(Double(seconds) * 1000 + Double(attoseconds / 1_000_000_000_000) / 1000),
                ])
        }
        return response
    }
}
