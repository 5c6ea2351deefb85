import Hummingbird

/// The HTTP side of push: plain GETs of the WebSocket path (which explain themselves) and
/// the web courier.
enum PushRoutes {
    static func add(to router: Router<BasicRequestContext>, channel: PushChannel, courier: WebCourier) {
        router.get("/push/:container/:environment") { request, _ in
            await channel.respondWithoutUpgrade(request)
        }
        router.get("/webcourier/:token") { _, context in
            await courier.poll(token: context.parameters.get("token") ?? "")
        }
    }
}
