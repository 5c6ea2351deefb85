import Hummingbird
import NimbusStore

/// The asset URLs (``AssetLinks``): uploads (`POST` as CloudKit, `PUT` chunks and `GET`
/// status as Nimbus's resumable extension) and downloads.
enum AssetRoutes {
    static func add(to router: Router<BasicRequestContext>, transfer: AssetTransfer, clock: WallClock) {
        router.post("/assets/1/upload/:token") { request, context in
            await transfer.upload(
                request, token: context.parameters.get("token") ?? "", now: clock.nowMillis(), logger: context.logger)
        }
        router.put("/assets/1/upload/:token") { request, context in
            await transfer.upload(
                request, token: context.parameters.get("token") ?? "", now: clock.nowMillis(), logger: context.logger)
        }
        router.get("/assets/1/upload/:token") { _, context in
            await transfer.uploadStatus(
                token: context.parameters.get("token") ?? "", now: clock.nowMillis(), logger: context.logger)
        }
        router.get("/assets/1/download/:token/:file") { request, context in
            await transfer.download(
                request, token: context.parameters.get("token") ?? "", now: clock.nowMillis(), logger: context.logger)
        }
    }
}
