import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// A push device for `nimbus bench push`: one WebSocket whose frames are read and
/// timestamped by a channel handler on the connection's event loop.
///
/// The bench runs up to 10 000 of these in one process, on the cores the server uses. A
/// client that handed each frame to a Swift task (as `WSClient` does) measured, with 1 000
/// devices woken by one save, mostly the wait of 1 000 tasks for the bench's own threads:
/// the arrival was stamped only when a device's task ran. Stamping on the event loop that
/// read the frame off the socket measures the server's push, not the bench's scheduler.
enum BenchWebSocketDevice {
    /// Connects to `url` (`ws://host:port/path?query`); `onOpen` runs once the upgrade
    /// completed, `onText` on the event loop for each text frame with the time it was read.
    /// Returns the channel once the connection is upgraded; closing it disconnects.
    static func connect(
        url: String, group: any EventLoopGroup, onOpen: @escaping @Sendable () -> Void,
        onText: @escaping @Sendable (ByteBuffer, ContinuousClock.Instant) -> Void
    ) async throws -> any Channel {
        guard let components = URLComponents(string: url), let host = components.host, let port = components.port else {
            throw BenchError("not a ws://host:port/… URL: \(url)")
        }
        let target = components.percentEncodedPath + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
        enum Upgrade: Sendable {
            case upgraded(any Channel)
            case refused
        }
        let upgrade: EventLoopFuture<Upgrade> = try await ClientBootstrap(group: group).connect(host: host, port: port) {
            channel in
            channel.eventLoop.makeCompletedFuture {
                let upgrader = NIOTypedWebSocketClientUpgrader<Upgrade>(
                    maxFrameSize: 1 << 20,
                    upgradePipelineHandler: { channel, _ in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(DeviceFrameHandler(onText: onText))
                            onOpen()
                            return .upgraded(channel)
                        }
                    })
                var headers = HTTPHeaders()
                headers.add(name: "Host", value: "\(host):\(port)")
                headers.add(name: "Content-Length", value: "0")
                let configuration = NIOTypedHTTPClientUpgradeConfiguration(
                    upgradeRequestHead: HTTPRequestHead(version: .http1_1, method: .GET, uri: target, headers: headers),
                    upgraders: [upgrader],
                    notUpgradingCompletionHandler: { channel in channel.eventLoop.makeCompletedFuture { .refused } })
                return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(
                    configuration: .init(upgradeConfiguration: configuration))
            }
        }
        switch try await upgrade.get() {
        case .upgraded(let channel): return channel
        case .refused: throw BenchError("the server refused the WebSocket upgrade of \(url)")
        }
    }
}

/// Stamps text frames as they are read; answers pings; closes on a close frame.
private final class DeviceFrameHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    let onText: @Sendable (ByteBuffer, ContinuousClock.Instant) -> Void

    init(onText: @escaping @Sendable (ByteBuffer, ContinuousClock.Instant) -> Void) {
        self.onText = onText
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            onText(frame.unmaskedData, .now)
        case .ping:
            // Client frames are masked (RFC 6455 §5.3).
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }
}
