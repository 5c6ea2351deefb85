import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOWebSocket
import NimbusProtocol
import NimbusStore

/// The WebSocket push channel (a Nimbus extension of CloudKit Web Services):
///
/// `GET /push/{container}/{environment}?ckAPIToken=…&ckWebAuthToken=…&deviceID=…`
///
/// authenticated like the API (a signed-in user is required) and naming the device (the
/// `deviceID` query parameter or the `X-Nimbus-Device-ID` header; the same ID sent on
/// `records/modify` keeps a device from being notified of its own changes). Each push is
/// one text message holding an Apple-shaped payload (``PushPayload``).
///
/// The device is registered before the upgrade completes, so every change committed after
/// the client sees the connection open is pushed to it. A device that was offline gets one
/// coalesced push on connecting (the latest notification it missed, with
/// `"nimbus": {"coalesced": n}`) and reads the notification collection for the rest.
/// A refused connection is upgraded and sent a close frame with code 1008 (policy
/// violation) and the reason; plain GETs get the error as JSON.
struct PushChannel: Sendable {
    let hub: PushHub
    let store: any NotificationStore
    let authenticator: Authenticator
    let settings: PushSettings
    let logger: Logger
    /// The time of day of device cursors.
    let clock: WallClock

    /// The container and environment of a push channel request target (path and query, as
    /// the request line has it), or `nil` for other targets.
    static func target(of uri: URI) -> (container: String, environment: String)? {
        let parts = uri.path.split(separator: "/")
        guard parts.count == 3, parts[0] == "push" else { return nil }
        return (String(parts[1]), String(parts[2]))
    }

    /// Decides an upgrade request to a push path: authenticates it, registers the device
    /// with the hub and queues its catch-up push; or says why it is refused.
    func decide(uri: URI, header: (String) -> String?, channel: any Channel) async -> PushSocketHandler.Role {
        do {
            let (recipient, deviceID, sessionID) = try await authenticatedDevice(uri: uri, header: header)
            let connection = PushConnection(
                recipient: recipient, deviceID: deviceID, channel: channel, bufferLimit: settings.bufferLimit,
                sessionID: sessionID, now: settings.now)
            guard await hub.register(connection) else {
                // The server is stopping: a retryable refusal (1001), the client comes back later.
                return .refused(.goingAway, reason: "TRY_AGAIN_LATER: the server is stopping; connect again")
            }
            let (hub, store, clock) = (hub, store, clock)
            channel.closeFuture.whenComplete { _ in
                connection.finish()
                Task {
                    await hub.unregister(connection)
                    try? await store.disconnect(
                        device: deviceID, for: recipient, deliveredThrough: connection.deliveredThrough,
                        now: clock.nowMillis())
                }
            }
            if let missed = try await store.catchUp(device: deviceID, for: recipient, now: clock.nowMillis()) {
                connection.enqueue(PushFrame(sequence: 0, payload: Self.coalescedPayload(missed)))
            }
            return .accepted(connection)
        } catch let error as CloudKitError {
            return .refused(.policyViolation, reason: Self.closeReason(error))
        } catch {
            logger.error("push connection failed: \(error)")
            return .refused(.unexpectedServerError, reason: Self.closeReason(error))
        }
    }

    /// Who connects: the signed-in user of the container environment, and the device.
    func authenticate(uri: URI, header: (String) -> String?) async throws -> (NotificationRecipient, String) {
        let (recipient, deviceID, _) = try await authenticatedDevice(uri: uri, header: header)
        return (recipient, deviceID)
    }

    /// Who connects, the device, and the session they came with.
    func authenticatedDevice(uri: URI, header: (String) -> String?) async throws
        -> (NotificationRecipient, String, String?)
    {
        guard let target = Self.target(of: uri) else { throw CloudKitError(.notFound, "no such endpoint: \(uri.path)") }
        guard let environment = ContainerEnvironment(rawValue: target.environment) else {
            throw CloudKitError.badRequest("environment must be development or production, got '\(target.environment)'")
        }
        // Hummingbird's parser, as for the API: values are percent-decoded, names taken as sent.
        let query = uri.queryParameters
        func parameter(_ name: String) -> String? { query.get(name).map { String($0) } }
        let credentials = Authenticator.Credentials(
            apiToken: parameter("ckAPIToken"), webAuthToken: parameter("ckWebAuthToken"),
            keyID: header(APIResponder.keyIDHeader.rawName), signatureDate: header(APIResponder.dateHeader.rawName),
            signature: header(APIResponder.signatureHeader.rawName),
            deviceID: header(APIResponder.deviceHeader.rawName) ?? parameter("deviceID"))
        let identity = try await authenticator.authenticate(
            credentials, container: target.container, environment: environment, scope: .private, subpath: uri.path,
            body: [])
        guard let user = identity.user else {
            throw CloudKitError(.authenticationRequired, "the push channel needs a signed-in user: pass ckWebAuthToken")
        }
        guard let deviceID = credentials.deviceID, !deviceID.isEmpty, deviceID.utf8.count <= 255 else {
            throw CloudKitError.badRequest(
                "the push channel needs the device's ID (1 to 255 bytes): pass deviceID or X-Nimbus-Device-ID")
        }
        return (
            NotificationRecipient(container: target.container, environment: environment, userRecordName: user.recordName),
            deviceID, identity.sessionID
        )
    }

    /// The answer to a plain GET of a push channel path: the authentication error, or how to connect.
    func respondWithoutUpgrade(_ request: Request) async -> Response {
        do {
            _ = try await authenticate(uri: request.uri) { name in HTTPField.Name(name).flatMap { request.headers[$0] } }
            return APIResponder.errorResponse(
                CloudKitError.badRequest("the push channel is a WebSocket: connect with an Upgrade: websocket request"))
        } catch let error as CloudKitError {
            return APIResponder.errorResponse(error)
        } catch {
            return APIResponder.errorResponse(CloudKitError(.internalError, "the server failed to authenticate the request"))
        }
    }

    /// The latest missed notification's payload, marked as standing for `count` notifications.
    static func coalescedPayload(_ missed: MissedNotifications) -> String {
        guard case .object(var members)? = try? JSON.parse(missed.latest.payload) else { return missed.latest.payload }
        var nimbus = members["nimbus"]?.object ?? [:]
        nimbus["coalesced"] = .int(missed.count)
        members["nimbus"] = .object(nimbus)
        return JSON.object(members).serialized()
    }

    /// A close reason within WebSocket's 123 bytes: the error code and the start of the reason.
    static func closeReason(_ error: any Error) -> String {
        let text: String
        if let error = error as? CloudKitError {
            text = "\(error.code.rawValue): \(error.reason)"
        } else {
            text = "INTERNAL_ERROR: the server failed to open the push channel; try again"
        }
        var reason = ""
        for character in text {
            if reason.utf8.count + String(character).utf8.count > 123 { break }
            reason.append(character)
        }
        return reason
    }
}
