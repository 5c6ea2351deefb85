import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NimbusServer

/// An SMTP server on an ephemeral loopback port that keeps every command line and every
/// mail it is given, and misbehaves on request: a refusal, garbage, a close or silence at a
/// chosen step, a STARTTLS answer with injected bytes.
final class FakeSMTPServer: Sendable {
    /// How the server answers.
    enum Behaviour: Sendable {
        /// A well-behaved server; with a user, it requires `AUTH PLAIN` or `AUTH LOGIN` with
        /// these credentials before `MAIL FROM`; `mechanisms` is what EHLO offers.
        case accept(user: String? = nil, password: String? = nil, mechanisms: String = "PLAIN LOGIN")
        /// Answers `code` to the command starting with `verb` (`RCPT`, `DATA`, …).
        case refuse(verb: String, code: Int)
        /// Greets with bytes that are no SMTP reply.
        case garbageGreeting
        /// Sends half a multi-line reply to the command starting with `verb`, then closes.
        case closeAt(verb: String)
        /// Never says anything.
        case silent
        /// Offers STARTTLS and answers it with `220` plus an injected plain-text reply.
        case startTLSInjection
    }

    /// One mail as the server took it.
    struct Received: Sendable {
        var from: String
        var to: String
        /// The data as sent, dot-stuffing included.
        var rawLines: [String]
        /// The data with dot-stuffing undone.
        var text: String { rawLines.map { $0.hasPrefix(".") ? String($0.dropFirst()) : $0 }.joined(separator: "\n") }
        /// The body after the blank line that ends the headers.
        var body: String { text.components(separatedBy: "\n\n").dropFirst().joined(separator: "\n\n") }
        /// The value of a header.
        func header(_ name: String) -> String? {
            text.components(separatedBy: "\n\n").first?.split(separator: "\n")
                .first { $0.lowercased().hasPrefix(name.lowercased() + ": ") }
                .map { String($0.dropFirst(name.count + 2)) }
        }
    }

    struct Record: Sendable {
        var commands: [String] = []
        var mails: [Received] = []
        var connections = 0
    }

    let port: Int
    private let channel: any Channel
    private let record: NIOLockedValueBox<Record>

    private init(port: Int, channel: any Channel, record: NIOLockedValueBox<Record>) {
        self.port = port
        self.channel = channel
        self.record = record
    }

    var commands: [String] { record.withLockedValue { $0.commands } }
    var mails: [Received] { record.withLockedValue { $0.mails } }
    var connections: Int { record.withLockedValue { $0.connections } }

    /// The last mail to `address`.
    func lastMail(to address: String) -> Received? { mails.last { $0.to == address } }

    /// Runs `body` with a server that behaves as told, then stops it.
    static func with<T>(_ behaviour: Behaviour, _ body: (FakeSMTPServer) async throws -> T) async throws -> T {
        let record = NIOLockedValueBox(Record())
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(FakeSMTPSession(behaviour: behaviour, record: record))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let server = FakeSMTPServer(port: channel.localAddress?.port ?? 0, channel: channel, record: record)
        do {
            let result = try await body(server)
            try? await channel.close()
            return result
        } catch {
            try? await channel.close()
            throw error
        }
    }

    /// Settings for a sender to this server (no TLS, loopback), with `user`'s credentials if given.
    func settings(user: String? = nil, password: String? = nil, commandTimeout: Duration = .seconds(10)) -> SMTPSettings {
        var settings = SMTPSettings(host: "127.0.0.1", port: port, security: .none, from: "nimbus@example.com")
        settings.username = user
        settings.password = password
        settings.fromName = "Nimbus"
        settings.commandTimeout = commandTimeout
        return settings
    }
}

/// One connection's side of the dialogue, on its event loop.
private final class FakeSMTPSession: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let behaviour: FakeSMTPServer.Behaviour
    let record: NIOLockedValueBox<FakeSMTPServer.Record>
    var pending: [UInt8] = []
    var data: [String]?
    var from = ""
    var to = ""
    var authenticated = false
    var loginSteps: [String]?

    init(behaviour: FakeSMTPServer.Behaviour, record: NIOLockedValueBox<FakeSMTPServer.Record>) {
        self.behaviour = behaviour
        self.record = record
    }

    func channelActive(context: ChannelHandlerContext) {
        record.withLockedValue { $0.connections += 1 }
        switch behaviour {
        case .silent: break
        case .garbageGreeting: write(context, "\u{1}\u{2}hello? \u{7F}no code here")
        default: write(context, "220 fake.smtp.test ESMTP ready")
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        pending.append(contentsOf: unwrapInboundIn(data).readableBytesView)
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            var line = String(decoding: pending[..<newline], as: UTF8.self)
            pending.removeFirst(newline + 1)
            if line.hasSuffix("\r") { line.removeLast() }
            handle(line, context)
        }
    }

    private func handle(_ line: String, _ context: ChannelHandlerContext) {
        if var lines = self.data {
            guard line == "." else {
                lines.append(line)
                self.data = lines
                return
            }
            self.data = nil
            let mail = FakeSMTPServer.Received(from: from, to: to, rawLines: lines)
            record.withLockedValue { $0.mails.append(mail) }
            write(context, "250 2.0.0 queued as FAKE1")
            return
        }
        record.withLockedValue { $0.commands.append(line) }
        if var steps = loginSteps {
            steps.append(line)
            loginSteps = steps
            if steps.count == 1 { return write(context, "334 UGFzc3dvcmQ6") }
            loginSteps = nil
            return authenticate(
                context, user: Self.decode(steps[0]), password: Self.decode(steps[1]))
        }
        let verb = line.prefix { $0 != " " && $0 != ":" }.uppercased()
        switch behaviour {
        case .refuse(let refused, let code) where verb == refused:
            return write(context, "\(code) 5.7.1 refused by the fake server")
        case .closeAt(let closing) where verb == closing:
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "250-half a reply\r\n")), promise: nil)
            context.close(promise: nil)
            return
        default: break
        }
        switch verb {
        case "EHLO":
            var lines = ["250-fake.smtp.test greets you", "250-8BITMIME", "250-SIZE 1000000"]
            if case .accept(_?, _, let mechanisms) = behaviour { lines.append("250-AUTH \(mechanisms)") }
            if case .startTLSInjection = behaviour { lines.append("250-STARTTLS") }
            lines.append("250 SMTPUTF8")
            write(context, lines.joined(separator: "\r\n"))
        case "STARTTLS":
            write(context, "220 2.0.0 ready to start TLS\r\n250 injected in plain text")
        case "AUTH":
            let words = line.split(separator: " ").map(String.init)
            if words.count == 3, words[1].uppercased() == "PLAIN" {
                let parts = Self.decode(words[2]).split(separator: "\0", omittingEmptySubsequences: false).map(String.init)
                authenticate(context, user: parts.count == 3 ? parts[1] : "", password: parts.last ?? "")
            } else if words.count == 2, words[1].uppercased() == "LOGIN" {
                loginSteps = []
                write(context, "334 VXNlcm5hbWU6")
            } else {
                write(context, "504 5.5.4 unknown mechanism")
            }
        case "MAIL":
            if case .accept(_?, _, _) = behaviour, !authenticated { return write(context, "530 5.7.0 authentication required") }
            from = Self.address(in: line)
            write(context, "250 2.1.0 ok")
        case "RCPT":
            to = Self.address(in: line)
            write(context, "250 2.1.5 ok")
        case "DATA":
            data = []
            write(context, "354 end data with <CR><LF>.<CR><LF>")
        case "QUIT":
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "221 2.0.0 bye\r\n")), promise: nil)
            context.close(promise: nil)
        default:
            write(context, "502 5.5.2 not implemented")
        }
    }

    private func authenticate(_ context: ChannelHandlerContext, user: String, password: String) {
        guard case .accept(let expectedUser, let expectedPassword, _) = behaviour, user == expectedUser,
            password == expectedPassword
        else { return write(context, "535 5.7.8 authentication credentials invalid") }
        authenticated = true
        write(context, "235 2.7.0 authentication successful")
    }

    private func write(_ context: ChannelHandlerContext, _ text: String) {
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: text + "\r\n")), promise: nil)
    }

    private static func decode(_ base64: String) -> String {
        Data(base64Encoded: base64).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// The address between `<` and `>` of `MAIL FROM:<…>` or `RCPT TO:<…>`.
    private static func address(in line: String) -> String {
        guard let open = line.firstIndex(of: "<"), let close = line[open...].firstIndex(of: ">") else { return "" }
        return String(line[line.index(after: open)..<close])
    }
}
