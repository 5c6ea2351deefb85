import NIOConcurrencyHelpers
import NIOCore
import NimbusProtocol

/// Counts the open connections of each remote address, for
/// ``ConnectionSettings/maxConnectionsPerAddress``.
final class ConnectionLimiter: Sendable {
    let limit: Int
    private let counts = NIOLockedValueBox<[String: Int]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    /// Admits a new connection: its lease (released when it closes, or earlier), or `nil`
    /// when its address holds `limit` connections already. Without a limit, or without an
    /// IP address (a Unix socket), every connection is admitted uncounted.
    func admit(_ channel: any Channel) -> Lease? {
        guard limit > 0, let address = channel.remoteAddress?.ipAddress else { return Lease(limiter: nil, address: "") }
        let admitted = counts.withLockedValue { counts -> Bool in
            let open = counts[address, default: 0]
            guard open < limit else { return false }
            counts[address] = open + 1
            return true
        }
        guard admitted else { return nil }
        let lease = Lease(limiter: self, address: address)
        channel.closeFuture.whenComplete { _ in lease.release() }
        return lease
    }

    /// Open connections counted for `address`.
    func count(of address: String) -> Int {
        counts.withLockedValue { $0[address, default: 0] }
    }

    fileprivate func release(_ address: String) {
        counts.withLockedValue { counts in
            let open = counts[address, default: 0] - 1
            counts[address] = open > 0 ? open : nil
        }
    }

    /// One counted connection; releasing it twice counts once.
    final class Lease: Sendable {
        private let limiter: ConnectionLimiter?
        private let address: String
        private let released = NIOLockedValueBox(false)

        fileprivate init(limiter: ConnectionLimiter?, address: String) {
            self.limiter = limiter
            self.address = address
        }

        func release() {
            let first = released.withLockedValue { released -> Bool in
                defer { released = true }
                return !released
            }
            if first { limiter?.release(address) }
        }
    }

    /// The answer to a connection over the limit, written as the connection opens: `429`
    /// with CloudKit's `THROTTLED` error, then the close.
    func refusal() -> ByteBuffer {
        let error = CloudKitError(
            .throttled,
            "too many open connections from your address (the limit is \(limit)); close idle connections and retry")
        let body = error.wireJSON(uuid: APIResponder.newUUID()).serializedBytes()
        var buffer = ByteBuffer()
        buffer.writeString(
            "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json; charset=utf-8\r\n"
                + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n")
        buffer.writeBytes(body)
        return buffer
    }
}

/// Writes a refusal once the connection is active, then closes it.
final class ConnectionRefusalHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let answer: ByteBuffer
    private var sent = false

    init(answer: ByteBuffer) {
        self.answer = answer
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { send(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        send(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // The request is not read: the answer is the same whatever it says.
    }

    private func send(_ context: ChannelHandlerContext) {
        guard !sent else { return }
        sent = true
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(answer)).whenComplete { _ in channel.close(promise: nil) }
    }
}
