import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket

/// The server's HTTP/1.1 channel: Hummingbird's HTTP handling, plus the WebSocket upgrade of
/// the push channel (`/push/{container}/{environment}`).
///
/// An upgraded push connection is served by a ``PushSocketHandler`` on its event loop; no task
/// stays behind for it, so an idle device costs only its channel and a few small objects
/// (the memory target is 8 KiB per idle connection). Requests to other paths are handled by
/// Hummingbird as usual; an upgrade request to another path is answered 400.
struct PushHTTPChannel: ServerChildChannel, HTTPChannelHandler {
    enum UpgradeResult: Sendable {
        /// A push WebSocket, now owned by its ``PushSocketHandler``.
        case push
        case notUpgraded(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        case failedUpgrade(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        /// Over the per-address connection limit: answered and closed by ``ConnectionRefusalHandler``.
        case refused
    }

    struct Value: ServerChildChannelValue {
        let upgradeResult: EventLoopFuture<UpgradeResult>
        let channel: any Channel
    }

    let responder: HTTPChannelHandler.Responder
    let push: PushChannel
    let configuration: HTTP1Channel.Configuration
    /// Timeouts and the per-address limit (``HTTPConnectionGuard``, ``ConnectionLimiter``).
    let connections: ConnectionSettings
    let limiter: ConnectionLimiter
    /// With a public URL, an upgrade naming another host is refused like any request.
    let origins: OriginPolicy

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            guard let lease = limiter.admit(channel) else {
                try channel.pipeline.syncOperations.addHandler(ConnectionRefusalHandler(answer: limiter.refusal()))
                return Value(upgradeResult: channel.eventLoop.makeSucceededFuture(.refused), channel: channel)
            }
            let push = push
            let configuration = configuration
            // What `shouldUpgrade` decided, for `upgradePipelineHandler` (they run in turn).
            let decision = NIOLockedValueBox<PushSocketHandler.Role?>(nil)
            let upgradeAttempted = NIOLockedValueBox(false)
            let upgrader = NIOTypedWebSocketServerUpgrader<UpgradeResult>(
                maxFrameSize: 1 << 12,
                shouldUpgrade: { channel, head in
                    upgradeAttempted.withLockedValue { $0 = true }
                    let uri = URI(head.uri)
                    let arrival = RequestArrival(
                        authority: head.headers.first(name: "Host"),
                        headers: HTTPFields(
                            head.headers.compactMap { name, value in
                                HTTPField.Name(name).map { HTTPField(name: $0, value: value) }
                            }),
                        peer: channel.remoteAddress?.ipAddress, local: LocalEndpoint(channel.localAddress))
                    guard PushChannel.target(of: uri) != nil, origins.misdirection(arrival) == nil else {
                        return channel.eventLoop.makeSucceededFuture(nil)
                    }
                    let promise = channel.eventLoop.makePromise(of: HTTPHeaders?.self)
                    promise.completeWithTask {
                        let role = await push.decide(uri: uri, header: { head.headers.first(name: $0) }, channel: channel)
                        decision.withLockedValue { $0 = role }
                        return HTTPHeaders()
                    }
                    // A WebSocket from here on (accepted, or refused with a close frame): the HTTP
                    // timeouts give way to the heartbeat. The guard goes before the upgrade
                    // removes the HTTP decoder, whose leftover bytes are no HTTP parts.
                    return promise.futureResult.flatMap { headers in
                        channel.pipeline.removeHandler(name: HTTPConnectionGuard.name)
                            .flatMap { channel.pipeline.removeHandler(name: ExpectContinueHandler.name) }
                            .map { headers }
                    }
                },
                upgradePipelineHandler: { channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        guard let role = decision.withLockedValue({ $0 }) else {
                            throw ChannelError.inappropriateOperationForState
                        }
                        // An authenticated device no longer counts against its address.
                        if case .accepted = role { lease.release() }
                        try channel.pipeline.syncOperations.addHandler(PushSocketHandler(role))
                        return UpgradeResult.push
                    }
                })
            let serverUpgradeConfiguration = NIOTypedHTTPServerUpgradeConfiguration(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        try channel.pipeline.syncOperations.addHandlers(configuration.additionalChannelHandlers())
                        try channel.pipeline.syncOperations.addHandler(
                            HTTPConnectionStateHandler(idleTimeout: configuration.idleTimeout.map { .init($0) }, logger: logger))
                        let asyncChannel = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                        return upgradeAttempted.withLockedValue { $0 }
                            ? UpgradeResult.failedUpgrade(asyncChannel) : UpgradeResult.notUpgraded(asyncChannel)
                    }
                })
            var upgradeConfiguration = NIOUpgradableHTTPServerPipelineConfiguration<UpgradeResult>(
                upgradeConfiguration: serverUpgradeConfiguration)
            upgradeConfiguration.enablePipelining = false  // HTTP is pipelined by NIOAsyncChannel
            upgradeConfiguration.enableErrorHandling = false  // handled by Hummingbird
            upgradeConfiguration.enableResponseHeaderValidation = false
            upgradeConfiguration.decoderConfiguration.maxHeaderFieldSize = configuration.httpDecoder.maxHeaderFieldSize
            upgradeConfiguration.decoderConfiguration.maxHeaderListSize = configuration.httpDecoder.maxHeaderListSize
            upgradeConfiguration.decoderConfiguration.maxHeaderFieldCount = configuration.httpDecoder.maxHeaderFieldCount
            let negotiation = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(
                configuration: upgradeConfiguration)
            // Right after the request decoder: every request and response part passes it.
            let upgradeHandler = try channel.pipeline.syncOperations.handler(
                type: NIOTypedHTTPServerUpgradeHandler<UpgradeResult>.self)
            try channel.pipeline.syncOperations.addHandler(
                HTTPConnectionGuard(settings: connections), name: HTTPConnectionGuard.name, position: .before(upgradeHandler))
            // Then `100 Continue`, written when a route reads the body (``ExpectContinueMiddleware``).
            try channel.pipeline.syncOperations.addHandler(
                ExpectContinueHandler(), name: ExpectContinueHandler.name, position: .before(upgradeHandler))
            return Value(upgradeResult: negotiation, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.upgradeResult.get() {
            case .push, .refused:
                // The channel's handler serves it from here on; the hub closes it at shutdown.
                return
            case .notUpgraded(let http1):
                let local = LocalEndpoint(http1.channel.localAddress)
                await PeerAddress.$current.withValue(http1.channel.remoteAddress?.ipAddress) {
                    await LocalAddress.$current.withValue(local) {
                        await ExpectContinueMiddleware.Connection.$channel.withValue(http1.channel) {
                            await handleHTTP(asyncChannel: http1, logger: logger)
                        }
                    }
                }
            case .failedUpgrade(let http1):
                await Self.writeFailedUpgrade(http1, logger: logger)
            }
        } catch {
            logger.debug("connection setup failed: \(error)")
        }
    }

    /// 400 with `Connection: close`, for an upgrade request to a path that takes none.
    static func writeFailedUpgrade(_ channel: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, logger: Logger) async {
        do {
            try await channel.executeThenClose { _, outbound in
                let head = HTTPResponse(status: .badRequest, headerFields: [.connection: "close", .contentLength: "0"])
                try await outbound.write(contentsOf: [.head(head), .end(nil)])
            }
        } catch {
            logger.trace("failed to answer a refused upgrade: \(error)")
        }
    }
}
