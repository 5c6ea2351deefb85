import Foundation
import NIOCore
import NIOPosix

/// A push device for `nimbus bench push`: one WebSocket whose frames are read and
/// timestamped by a single channel handler on the connection's event loop.
///
/// The bench runs up to 10 000 of these in one process, on the cores the server uses, so
/// what a device costs per frame is taken from the server being measured. A client that
/// handed each frame to a Swift task (as `WSClient` does) measured, with 1 000 devices
/// woken by one save, mostly the wait of 1 000 tasks for the bench's own threads; NIO's
/// WebSocket client pipeline (HTTP codec for the upgrade, then a frame decoder, an error
/// handler and the device's handler, one `WebSocketFrame` per frame) still cost the
/// devices about as much user time per push as the server spent writing it. This handler
/// speaks the little of RFC 6455 a device needs — the upgrade request, unmasked server
/// frames, masked pongs — straight on the socket's bytes.
enum BenchWebSocketDevice {
    /// Connects to `url` (`ws://host:port/path?query`); `onOpen` runs once the upgrade
    /// completed, `onText` on the event loop for each text frame's payload with the time
    /// its last bytes were read. Returns the channel once upgraded; closing it disconnects.
    static func connect(
        url: String, group: any EventLoopGroup, onOpen: @escaping @Sendable () -> Void,
        onText: @escaping @Sendable (ByteBuffer, ContinuousClock.Instant) -> Void
    ) async throws -> any Channel {
        guard let components = URLComponents(string: url), let host = components.host, let port = components.port else {
            throw BenchError("not a ws://host:port/… URL: \(url)")
        }
        let target = components.percentEncodedPath + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
        let loop = group.next()
        let upgraded = loop.makePromise(of: Void.self)
        let request = DeviceSocketHandler.upgradeRequest(target: target, host: "\(host):\(port)")
        let channel = try await ClientBootstrap(group: loop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        DeviceSocketHandler(request: request, upgraded: upgraded, onOpen: onOpen, onText: onText))
                }
            }
            .connect(host: host, port: port).get()
        do {
            try await upgraded.futureResult.get()
        } catch {
            try? await channel.close()
            throw BenchError("the server refused the WebSocket upgrade of \(url): \(error)")
        }
        return channel
    }
}

/// The device's whole pipeline: sends the upgrade request, checks for `101`, then splits the
/// byte stream into frames — text frames to `onText`, pings answered, a close frame closes.
private final class DeviceSocketHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let request: String
    private let upgraded: EventLoopPromise<Void>
    private let onOpen: @Sendable () -> Void
    private let onText: @Sendable (ByteBuffer, ContinuousClock.Instant) -> Void
    private var isOpen = false
    private var received: ByteBuffer?

    init(
        request: String, upgraded: EventLoopPromise<Void>, onOpen: @escaping @Sendable () -> Void,
        onText: @escaping @Sendable (ByteBuffer, ContinuousClock.Instant) -> Void
    ) {
        self.request = request
        self.upgraded = upgraded
        self.onOpen = onOpen
        self.onText = onText
    }

    static func upgradeRequest(target: String, host: String) -> String {
        let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        return "GET \(target) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\n\r\n"
    }

    func channelActive(context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: request)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let readAt = ContinuousClock.now
        var bytes = unwrapInboundIn(data)
        if received == nil {
            received = bytes
        } else {
            received!.writeBuffer(&bytes)
        }
        if !isOpen {
            guard let opened = readUpgradeResponse(context: context), opened else { return }
        }
        while let frame = nextFrame() {
            switch frame.opcode {
            case 0x1:
                onText(frame.payload, readAt)
            case 0x9:
                context.writeAndFlush(wrapOutboundOut(Self.maskedFrame(opcode: 0xA, payload: frame.payload)), promise: nil)
            case 0x8:
                context.close(promise: nil)
                return
            default:
                break
            }
        }
        if received?.readableBytes == 0 { received = nil }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !isOpen { upgraded.fail(BenchError("the connection closed before the upgrade")) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// `nil` while the response head is incomplete; then whether it was `101`.
    private func readUpgradeResponse(context: ChannelHandlerContext) -> Bool? {
        guard let buffer = received,
            let end = buffer.readableBytesView.firstRange(of: Array("\r\n\r\n".utf8))
        else { return nil }
        let headLength = end.upperBound - buffer.readerIndex
        let head = buffer.getString(at: buffer.readerIndex, length: headLength) ?? ""
        received!.moveReaderIndex(forwardBy: headLength)
        guard head.hasPrefix("HTTP/1.1 101") else {
            upgraded.fail(BenchError(String(head.prefix(200))))
            context.close(promise: nil)
            return false
        }
        isOpen = true
        onOpen()
        upgraded.succeed()
        return true
    }

    /// The next complete frame in `received` (server frames are unmasked and, from Nimbus,
    /// never fragmented), consumed; `nil` until one is complete.
    private func nextFrame() -> (opcode: UInt8, payload: ByteBuffer)? {
        guard let buffer = received, buffer.readableBytes >= 2,
            let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self),
            let second = buffer.getInteger(at: buffer.readerIndex + 1, as: UInt8.self)
        else { return nil }
        var headerLength = 2
        var length = Int(second & 0x7F)
        if length == 126 {
            guard let extended = buffer.getInteger(at: buffer.readerIndex + 2, as: UInt16.self) else { return nil }
            headerLength = 4
            length = Int(extended)
        } else if length == 127 {
            guard let extended = buffer.getInteger(at: buffer.readerIndex + 2, as: UInt64.self) else { return nil }
            headerLength = 10
            length = Int(extended)
        }
        guard buffer.readableBytes >= headerLength + length,
            let payload = buffer.getSlice(at: buffer.readerIndex + headerLength, length: length)
        else { return nil }
        received!.moveReaderIndex(forwardBy: headerLength + length)
        return (first & 0x0F, payload)
    }

    /// A client frame (RFC 6455 §5.3: masked), for pongs.
    private static func maskedFrame(opcode: UInt8, payload: ByteBuffer) -> ByteBuffer {
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        var frame = ByteBuffer()
        frame.writeInteger(0x80 | opcode)
        frame.writeInteger(0x80 | UInt8(min(payload.readableBytes, 125)))
        frame.writeBytes(mask)
        for (index, byte) in payload.readableBytesView.prefix(125).enumerated() {
            frame.writeInteger(byte ^ mask[index % 4])
        }
        return frame
    }
}
