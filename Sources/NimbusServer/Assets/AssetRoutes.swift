import HTTPTypes
import Hummingbird
import NimbusStore

/// The asset URLs (``AssetLinks``): uploads (`POST` as CloudKit, `PUT` chunks and `GET`
/// status as Nimbus's resumable extension) and downloads.
///
/// A browser app on one of the allowed origins of the container a URL's token belongs to
/// reads the answers (``CrossOriginRule``). CloudKit JS uploads a file with an
/// `XMLHttpRequest` `POST` of the `File` itself: its `Content-Type` is the file's type (say
/// `image/jpeg`), which is no CORS "simple" content type, so the browser asks first with an
/// `OPTIONS` preflight, answered here for `POST` with a `Content-Type`.
enum AssetRoutes {
    static func add(
        to router: Router<BasicRequestContext>, transfer: AssetTransfer, clock: WallClock, throttle: RequestThrottle? = nil,
        crossOrigin: CrossOriginRule
    ) {
        router.post("/assets/1/upload/:token") { request, context in
            await throttled(throttle, request, crossOrigin) {
                await transfer.upload(
                    request, token: context.parameters.get("token") ?? "", now: clock.nowMillis(), logger: context.logger)
            }
        }
        router.put("/assets/1/upload/:token") { request, context in
            await throttled(throttle, request, crossOrigin) {
                await transfer.upload(
                    request, token: context.parameters.get("token") ?? "", now: clock.nowMillis(), logger: context.logger)
            }
        }
        router.get("/assets/1/upload/:token") { request, context in
            await throttled(throttle, request, crossOrigin) {
                await transfer.uploadStatus(
                    token: context.parameters.get("token") ?? "", now: clock.nowMillis(), logger: context.logger)
            }
        }
        router.on("/assets/1/upload/:token", method: .options) { request, context in
            await throttled(throttle, request, crossOrigin) {
                let container = await transfer.uploadContainer(
                    token: context.parameters.get("token") ?? "", now: clock.nowMillis())
                return TokenAnswer(Response(status: .noContent), container: container)
            } allowed: { response in
                response.headers[.accessControlAllowMethods] = "POST"
                response.headers[.accessControlAllowHeaders] = "Content-Type"
                response.headers[.accessControlMaxAge] = "600"
            }
        }
        router.get("/assets/1/download/:token/:file") { request, context in
            await throttled(throttle, request, crossOrigin) {
                await transfer.download(
                    request, token: context.parameters.get("token") ?? "", now: clock.nowMillis(), logger: context.logger)
            }
        }
    }

    /// The transfer's response, or THROTTLED (429, `Retry-After`) when the client's address
    /// is over its rate; readable by the request's origin when the ``CrossOriginRule`` allows
    /// it for the token's container (then `allowed` adds to it).
    private static func throttled(
        _ throttle: RequestThrottle?, _ request: Request, _ crossOrigin: CrossOriginRule,
        _ transfer: () async -> TokenAnswer, allowed: (inout Response) -> Void = { _ in }
    ) async -> Response {
        do {
            try throttle?.checkTransfer(address: PeerAddress.current)
        } catch {
            return APIResponder.errorResponse(error)
        }
        let answer = await transfer()
        var response = answer.response
        if await crossOrigin.apply(to: &response, request: request, container: answer.container) {
            allowed(&response)
        }
        return response
    }
}
