import Hummingbird
import NimbusStore

/// The asset URLs (``AssetLinks``): uploads (`POST` as CloudKit, `PUT` chunks and `GET`
/// status as Nimbus's resumable extension) and downloads.
enum AssetRoutes {
    static func add(
        to router: Router<BasicRequestContext>, transfer: AssetTransfer, clock: WallClock, throttle: RequestThrottle? = nil
    ) {
        router.post("/assets/1/upload/:token") { request, context in
            await throttled(throttle) {
                await transfer.upload(
                    request, token: context.parameters.get("token") ?? "", now: clock.nowMillis(), logger: context.logger)
            }
        }
        router.put("/assets/1/upload/:token") { request, context in
            await throttled(throttle) {
                await transfer.upload(
                    request, token: context.parameters.get("token") ?? "", now: clock.nowMillis(), logger: context.logger)
            }
        }
        router.get("/assets/1/upload/:token") { _, context in
            await throttled(throttle) {
                await transfer.uploadStatus(
                    token: context.parameters.get("token") ?? "", now: clock.nowMillis(), logger: context.logger)
            }
        }
        router.get("/assets/1/download/:token/:file") { request, context in
            await throttled(throttle) {
                await transfer.download(
                    request, token: context.parameters.get("token") ?? "", now: clock.nowMillis(), logger: context.logger)
            }
        }
    }

    /// The transfer's response, or THROTTLED (429, `Retry-After`) when the client's address
    /// is over its rate.
    private static func throttled(_ throttle: RequestThrottle?, _ transfer: () async -> Response) async -> Response {
        do {
            try throttle?.checkTransfer(address: PeerAddress.current)
        } catch {
            return APIResponder.errorResponse(error)
        }
        return await transfer()
    }
}
