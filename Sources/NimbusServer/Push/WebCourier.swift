import HTTPTypes
import Hummingbird
import NIOCore
import NimbusProtocol
import NimbusStore

/// The long-polled `webcourierURL` of `tokens/create`, so CloudKit Web Services clients in
/// a browser get pushes too: `GET /webcourier/{token}`.
///
/// A poll answers at once with the next push when one is waiting, else holds the request
/// until a notification for the token's user is committed or ``PushSettings/courierTimeout``
/// passes (then 200 with an empty body: poll again). One push per response, in the same
/// Apple shape as the WebSocket channel; when several were waiting it is the latest, with
/// `"nimbus": {"coalesced": n}`, and the client reads the notification collection for the
/// rest. The token is the device: pass it as `deviceID` on modify requests to not be told
/// of your own changes.
struct WebCourier: Sendable {
    let hub: PushHub
    let store: any NotificationStore
    let settings: PushSettings
    /// The time of day of device cursors.
    let clock: WallClock

    func poll(token: String) async -> Response {
        do {
            guard let pushToken = try await store.pushToken(token) else {
                throw CloudKitError(.notFound, "no such push token; get one from tokens/create")
            }
            guard pushToken.registered else {
                throw CloudKitError.badRequest("register the push token with tokens/register before polling its courier")
            }
            let recipient = pushToken.recipient
            // Listen before looking, so a notification committed in between still wakes the poll.
            let signal = CourierSignal()
            await hub.addCourier(signal, for: recipient)
            defer { Task { await hub.removeCourier(signal, for: recipient) } }
            if let missed = try await store.catchUp(device: token, for: recipient, now: clock.nowMillis()) {
                return Self.push(missed)
            }
            await signal.wait(timeout: settings.courierTimeout)
            if let missed = try await store.catchUp(device: token, for: recipient, now: clock.nowMillis()) {
                return Self.push(missed)
            }
            return Response(status: .ok, headers: [.cacheControl: "no-store"], body: ResponseBody())
        } catch let error as CloudKitError {
            return APIResponder.errorResponse(error)
        } catch {
            return APIResponder.errorResponse(CloudKitError(.internalError, "the courier failed; poll again"))
        }
    }

    static func push(_ missed: MissedNotifications) -> Response {
        let text = missed.count > 1 ? PushChannel.coalescedPayload(missed) : missed.latest.payload
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
