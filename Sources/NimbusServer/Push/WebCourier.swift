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
///
/// CloudKit JS polls the URL as soon as `tokens/create` answers, without `tokens/register`
/// (Apple: the token "can be used to long-poll"): the first poll of a token registers it, and
/// the courier delivers what is committed from then on. An error answer waits
/// ``refusalPause`` first, as CloudKit JS polls again 10 ms after one.
struct WebCourier: Sendable {
    let hub: PushHub
    let store: any NotificationStore
    let settings: PushSettings
    /// The time of day of device cursors.
    let clock: WallClock
    /// How long a poll that fails (an unknown or expired token) waits before its error is
    /// sent. CloudKit JS polls again 10 ms after an error, for ever: with the pause, such a
    /// loop costs the server one request per pause, not a hundred a second.
    var refusalPause: Duration = .seconds(1)

    /// The answer to a poll, with the container of the token once it was found.
    func poll(token: String) async -> TokenAnswer {
        var container: String?
        do {
            // Tokens are 48 hex digits; anything far longer was never issued (and is not looked up).
            guard token.utf8.count <= 255, let pushToken = try await store.pushToken(token) else {
                throw CloudKitError(.notFound, "no such push token; get one from tokens/create")
            }
            container = pushToken.recipient.container
            return TokenAnswer(try await answer(token, pushToken), container: container)
        } catch let error as CloudKitError {
            await pauseBeforeRefusing()
            return TokenAnswer(APIResponder.errorResponse(error), container: container)
        } catch {
            await pauseBeforeRefusing()
            return TokenAnswer(
                APIResponder.errorResponse(CloudKitError(.internalError, "the courier failed; poll again")),
                container: container)
        }
    }

    private func answer(_ token: String, _ found: PushToken) async throws -> Response {
        var pushToken = found
        if !pushToken.registered {
            pushToken = try await store.registerPushToken(
                token, for: pushToken.recipient, apnsEnvironment: pushToken.apnsEnvironment, now: clock.nowMillis())
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
    }

    /// Holds an error answer for ``refusalPause``: a client that polls again right after each
    /// error then polls once per pause.
    private func pauseBeforeRefusing() async {
        try? await Task.sleep(for: refusalPause)
    }

    static func push(_ missed: MissedNotifications) -> Response {
        let text = missed.count > 1 ? PushChannel.coalescedPayload(missed) : missed.latest.payload
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
