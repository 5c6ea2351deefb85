import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
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
/// A refused connection is upgraded and closed at once with close code 1008 (policy
/// violation) and the reason; plain GETs get the error as JSON.
struct PushChannel: Sendable {
    let hub: PushHub
    let store: any NotificationStore
    let authenticator: Authenticator
    let settings: PushSettings
    let logger: Logger

    typealias Handler = WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>

    /// The container and environment of a push channel path, or `nil` for other paths.
    static func target(of path: String) -> (container: String, environment: String)? {
        let parts = path.split(separator: "?", maxSplits: 1)[0].split(separator: "/").map(String.init)
        guard parts.count == 3, parts[0] == "push" else { return nil }
        return (parts[1], parts[2])
    }

    /// Decides a WebSocket upgrade: push channel paths are upgraded (and refused ones closed
    /// with their reason); other paths go on to the HTTP routes.
    func shouldUpgrade(_ head: HTTPRequest, channel: any Channel, logger: Logger) async -> ShouldUpgradeResult<Handler> {
        guard let path = head.path, Self.target(of: path) != nil else { return .dontUpgrade }
        do {
            let connection = try await open(head, channel: channel)
            return .upgrade([:]) { inbound, outbound, _ in
                try await self.run(connection, inbound: inbound, outbound: outbound)
            }
        } catch {
            let reason = Self.closeReason(error)
            let code: WebSocketErrorCode = error is CloudKitError ? .policyViolation : .unexpectedServerError
            if !(error is CloudKitError) { self.logger.error("push connection failed: \(error)") }
            return .upgrade([:]) { inbound, outbound, _ in
                try await Self.refuse(code: code, reason: reason, inbound: inbound, outbound: outbound)
            }
        }
    }

    /// Sends the close frame, then waits (at most 10 s) for the client's answer before the
    /// connection is closed. The close frame must not be followed at once by the end of the
    /// stream: a client still installing its WebSocket handlers after the upgrade response
    /// can miss that event and hang (swift-websocket 1.6); a frame it never misses.
    static func refuse(
        code: WebSocketErrorCode, reason: String, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter
    ) async throws {
        var data = ByteBuffer()
        data.write(webSocketErrorCode: code)
        data.writeString(reason)
        try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)))
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    for try await _ in inbound {}
                } catch {}
            }
            group.addTask { try? await Task.sleep(for: .seconds(10)) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Authenticates, registers the device with the hub and queues its catch-up push.
    func open(_ head: HTTPRequest, channel: any Channel) async throws -> PushConnection {
        let (recipient, deviceID) = try await authenticate(path: head.path ?? "", headers: head.headerFields)
        let connection = PushConnection(
            recipient: recipient, deviceID: deviceID, channel: channel, bufferLimit: settings.bufferLimit)
        await hub.register(connection)
        let (hub, store) = (hub, store)
        channel.closeFuture.whenComplete { _ in
            Task {
                await hub.unregister(connection)
                connection.finish()
                try? await store.disconnect(
                    device: deviceID, for: recipient, deliveredThrough: connection.deliveredThrough, now: Self.nowMillis())
            }
        }
        if let missed = try await store.catchUp(device: deviceID, for: recipient, now: Self.nowMillis()) {
            connection.enqueue(PushFrame(sequence: 0, payload: ByteBuffer(string: Self.coalescedPayload(missed))))
        }
        return connection
    }

    /// Who connects: the signed-in user of the container environment, and the device.
    func authenticate(path: String, headers: HTTPFields) async throws -> (NotificationRecipient, String) {
        guard let target = Self.target(of: path) else { throw CloudKitError(.notFound, "no such endpoint: \(path)") }
        guard let environment = ContainerEnvironment(rawValue: target.environment) else {
            throw CloudKitError.badRequest("environment must be development or production, got '\(target.environment)'")
        }
        let query = Self.queryParameters(of: path)
        let credentials = Authenticator.Credentials(
            apiToken: query["ckAPIToken"], webAuthToken: query["ckWebAuthToken"],
            keyID: headers[APIResponder.keyIDHeader], signatureDate: headers[APIResponder.dateHeader],
            signature: headers[APIResponder.signatureHeader],
            deviceID: headers[APIResponder.deviceHeader] ?? query["deviceID"])
        let identity = try await authenticator.authenticate(
            credentials, container: target.container, environment: environment, scope: .private,
            subpath: String(path.split(separator: "?", maxSplits: 1)[0]), body: [])
        guard let user = identity.user else {
            throw CloudKitError(.authenticationRequired, "the push channel needs a signed-in user: pass ckWebAuthToken")
        }
        guard let deviceID = credentials.deviceID, !deviceID.isEmpty, deviceID.utf8.count <= 255 else {
            throw CloudKitError.badRequest(
                "the push channel needs the device's ID (1 to 255 bytes): pass deviceID or X-Nimbus-Device-ID")
        }
        return (
            NotificationRecipient(container: target.container, environment: environment, userRecordName: user.recordName),
            deviceID
        )
    }

    /// Writes the device's pushes until the connection ends. Reading the inbound side
    /// answers the heartbeat pings and the close handshake; clients send nothing else.
    func run(_ connection: PushConnection, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter)
        async throws
    {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    for try await _ in inbound {}
                } catch {}
                connection.finish()
            }
            for await frame in connection.frames {
                try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .text, data: frame.payload)))
                connection.written(frame)
            }
            group.cancelAll()
        }
    }

    /// The answer to a plain GET of a push channel path: the authentication error, or how to connect.
    func respondWithoutUpgrade(_ request: Request) async -> Response {
        var path = request.uri.path
        if let query = request.uri.query { path += "?\(query)" }
        do {
            _ = try await authenticate(path: path, headers: request.headers)
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

    static func queryParameters(of path: String) -> [String: String] {
        guard let query = path.split(separator: "?", maxSplits: 1).dropFirst().first else { return [:] }
        var parameters: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            let name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            let raw = parts.count > 1 ? String(parts[1]).replacingOccurrences(of: "+", with: " ") : ""
            parameters[name] = raw.removingPercentEncoding ?? raw
        }
        return parameters
    }

    static func nowMillis() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }
}
