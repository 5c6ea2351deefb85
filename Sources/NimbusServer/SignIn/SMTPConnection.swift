import NIOCore
import NIOPosix
import NIOSSL

/// One connection to an SMTP server: send a command, get its reply, with a time limit on
/// each. Commands are never pipelined, so a reply nobody asked for is an error.
struct SMTPConnection: Sendable {
    private let channel: any Channel
    private let handler: NIOLoopBound<SMTPReplyHandler>
    private let timeout: TimeAmount

    /// Connects to `host:port`, with TLS from the first byte when `tls` is given (`smtps`).
    static func open(
        host: String, port: Int, tls: NIOSSLContext?, connectTimeout: Duration, commandTimeout: Duration
    ) async throws(SMTPError) -> SMTPConnection {
        let serverName = SMTPSettings.isIPAddress(host) ? nil : host
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(TimeAmount(connectTimeout))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    }
                    try channel.pipeline.syncOperations.addHandler(SMTPReplyHandler())
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: host, port: port).get()
        } catch {
            throw SMTPError(.connectionFailed, "could not connect to \(host):\(port): \(error)")
        }
        do {
            let handler = try await channel.eventLoop.submit {
                NIOLoopBound(try channel.pipeline.syncOperations.handler(type: SMTPReplyHandler.self), eventLoop: channel.eventLoop)
            }.get()
            return SMTPConnection(channel: channel, handler: handler, timeout: TimeAmount(commandTimeout))
        } catch {
            channel.close(promise: nil)
            throw SMTPError(.connectionClosed, "the connection closed as it opened")
        }
    }

    /// The next reply without sending anything: the server's greeting.
    func greeting() async throws(SMTPError) -> SMTPReply {
        try await exchange(nil, upgrade: nil)
    }

    /// Sends one command line (CRLF is added) and returns its reply.
    func command(_ line: String) async throws(SMTPError) -> SMTPReply {
        try await exchange(Array((line + "\r\n").utf8), upgrade: nil)
    }

    /// Sends a message's data (already dot-stuffed and ending in `.`) and returns its reply.
    func data(_ bytes: [UInt8]) async throws(SMTPError) -> SMTPReply {
        try await exchange(bytes, upgrade: nil)
    }

    /// Sends `STARTTLS`; on a `220`, TLS starts before any other byte is read.
    func startTLS(_ tls: NIOSSLContext, serverName: String?) async throws(SMTPError) -> SMTPReply {
        try await exchange(Array("STARTTLS\r\n".utf8), upgrade: (tls, serverName))
    }

    /// Says `QUIT` and closes without waiting for the answer: the mail is already accepted,
    /// and a server that never answers must not hold the request for a command's time limit.
    func quit() async {
        try? await channel.writeAndFlush(ByteBuffer(string: "QUIT\r\n"))
        await close()
    }

    /// Closes the connection (after `QUIT`, or on any failure).
    func close() async {
        try? await channel.close()
    }

    private func exchange(_ bytes: [UInt8]?, upgrade: (NIOSSLContext, String?)?) async throws(SMTPError) -> SMTPReply {
        let (handler, timeout) = (self.handler, self.timeout)
        let reply = channel.eventLoop.flatSubmit { () -> EventLoopFuture<SMTPReply> in
            let tls: NIOSSLClientHandler?
            do {
                tls = try upgrade.map { try NIOSSLClientHandler(context: $0.0, serverHostname: $0.1) }
            } catch {
                return handler.value.eventLoop.makeFailedFuture(SMTPError(.tlsFailed, "TLS could not start: \(error)"))
            }
            return handler.value.exchange(bytes, timeout: timeout, upgrade: tls)
        }
        do {
            return try await reply.get()
        } catch let error as SMTPError {
            await close()
            throw error
        } catch {
            await close()
            throw SMTPError(.connectionClosed, "the connection failed: \(error)")
        }
    }
}

/// The event-loop half of ``SMTPConnection``: cuts what arrives into replies and hands each
/// to the command waiting for it; fails that command on a malformed reply, a closed
/// connection, a TLS failure or its time limit, and closes the connection.
final class SMTPReplyHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Replies that may wait unread before the server counts as misbehaving.
    static let maxUnread = 4

    private var parser = SMTPReplyParser()
    private var unread: [SMTPReply] = []
    private var waiting: (promise: EventLoopPromise<SMTPReply>, timeout: Scheduled<Void>)?
    private var failure: SMTPError?
    /// TLS to add in front of everything once the server says `220` to `STARTTLS`.
    private var pendingTLS: NIOSSLClientHandler?
    private var context: ChannelHandlerContext?

    var eventLoop: any EventLoop { context?.eventLoop ?? MultiThreadedEventLoopGroup.singleton.any() }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// Writes `bytes` (when given) and waits for the next reply, at most `timeout`.
    func exchange(_ bytes: [UInt8]?, timeout: TimeAmount, upgrade: NIOSSLClientHandler?) -> EventLoopFuture<SMTPReply> {
        guard let context else {
            return eventLoop.makeFailedFuture(failure ?? SMTPError(.connectionClosed, "the connection is closed"))
        }
        let promise = context.eventLoop.makePromise(of: SMTPReply.self)
        guard waiting == nil else {
            promise.fail(SMTPError(.malformedReply, "a command was sent before the last one was answered"))
            return promise.futureResult
        }
        if bytes != nil, !unread.isEmpty || parser.hasUnreadBytes {
            unread.removeAll()
            fail(SMTPError(.malformedReply, "the server sent a reply before the command it answers"))
        }
        if let upgrade { pendingTLS = upgrade }
        let scheduled = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
            fail(SMTPError(.timedOut, "the server did not answer within \(timeout.nanoseconds / 1_000_000) ms"))
        }
        waiting = (promise, scheduled)
        if failure == nil, let bytes {
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: bytes)), promise: nil)
        }
        deliver()
        return promise.futureResult
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard failure == nil else { return }
        let buffer = unwrapInboundIn(data)
        parser.append(buffer.readableBytesView)
        do throws(SMTPError) {
            while let reply = try parser.next() {
                if let tls = pendingTLS {
                    pendingTLS = nil
                    if reply.code == 220 {
                        // Bytes after the 220 were sent in plain text to be read as if they came over
                        // TLS (the STARTTLS injection attack): refuse them.
                        guard !parser.hasUnreadBytes else {
                            throw SMTPError(.tlsFailed, "the server sent more data after agreeing to STARTTLS")
                        }
                        do {
                            try context.pipeline.syncOperations.addHandler(tls, position: .first)
                        } catch {
                            throw SMTPError(.tlsFailed, "TLS could not start: \(error)")
                        }
                    }
                }
                unread.append(reply)
                guard unread.count <= Self.maxUnread else {
                    throw SMTPError(.malformedReply, "the server sent replies to commands it was not sent")
                }
            }
        } catch {
            fail(error)
        }
        deliver()
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(SMTPError(.connectionClosed, "the server closed the connection"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is NIOSSLError || error is BoringSSLError {
            fail(SMTPError(.tlsFailed, "TLS failed: \(error)"))
        } else {
            fail(SMTPError(.connectionClosed, "the connection failed: \(error)"))
        }
    }

    /// Remembers the first failure, closes the connection and fails the waiting command.
    private func fail(_ error: SMTPError) {
        if failure == nil {
            failure = error
            context?.close(promise: nil)
        }
        deliver()
    }

    /// Hands the waiting command a reply (those that arrived before a failure first), or the failure.
    private func deliver() {
        guard let waiting else { return }
        if !unread.isEmpty {
            self.waiting = nil
            waiting.timeout.cancel()
            waiting.promise.succeed(unread.removeFirst())
        } else if let failure {
            self.waiting = nil
            waiting.timeout.cancel()
            waiting.promise.fail(failure)
        }
    }
}
