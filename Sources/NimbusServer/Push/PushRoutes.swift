import Hummingbird

/// The HTTP side of push: plain GETs of the WebSocket path (which explain themselves) and
/// the web courier.
enum PushRoutes {
    static func add(
        to router: Router<BasicRequestContext>, channel: PushChannel, crossOrigin: CrossOriginRule, courier: WebCourier
    ) {
        router.get("/push/:container/:environment") { request, _ in
            await channel.respondWithoutUpgrade(request)
        }
        // CloudKit JS polls with a plain GET (a CORS "simple" request): no preflight.
        router.get("/webcourier/:token") { request, context in
            await courier.poll(token: context.parameters.get("token") ?? "").response(to: request, crossOrigin: crossOrigin)
        }
    }
}
