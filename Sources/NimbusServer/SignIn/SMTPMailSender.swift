import Foundation
import Logging
import NIOSSL
import NimbusStore

/// Sends each mail over SMTP (RFC 5321): one connection per mail, STARTTLS or TLS as
/// ``SMTPSettings/security`` says, `AUTH PLAIN` or `AUTH LOGIN` when a user name is set.
///
/// Every reply is read as hostile input (see ``SMTPReplyParser``), every command has a time
/// limit, and a failure is an ``SMTPError`` that is logged with the recipient and the reason,
/// never the password or the mail's body.
///
/// ```swift
/// var settings = try SMTPSettings(url: "smtp://nimbus%40example.com@mail.example.com", from: "nimbus@example.com")
/// settings.password = ProcessInfo.processInfo.environment["NIMBUS_SMTP_PASSWORD"]
/// configuration.signIn.mailSender = try SMTPMailSender(settings: settings, logger: logger)
/// ```
public struct SMTPMailSender: MailSender {
    public let settings: SMTPSettings
    private let tls: NIOSSLContext?
    private let logger: Logger
    private let clock: WallClock

    /// - Parameter clock: what the `Date` header reads.
    public init(settings: SMTPSettings, logger: Logger, clock: WallClock = .system) throws(SMTPError) {
        try settings.checkCredentialsAreProtected()
        self.settings = settings
        self.logger = logger
        self.clock = clock
        do {
            tls = settings.security == .none ? nil : try NIOSSLContext(configuration: settings.tls)
        } catch {
            throw SMTPError(.invalidConfiguration, "the TLS settings are not usable: \(error)")
        }
    }

    public func send(_ mail: Mail) async throws {
        do {
            try await deliver(mail)
            logger.info("mail sent", metadata: RequestID.tagged(["to": "\(mail.to)", "subject": "\(mail.subject)"]))
        } catch {
            logger.error(
                "mail not sent",
                metadata: RequestID.tagged([
                    "to": "\(mail.to)", "smtp": "\(settings.host):\(settings.port)", "error": "\(error)",
                ]))
            throw error
        }
    }

    private func deliver(_ mail: Mail) async throws(SMTPError) {
        _ = try SMTPMessage.checked(address: mail.to, role: "recipient")
        _ = try SMTPMessage.headerText(mail.subject, field: "subject")
        let connection = try await SMTPConnection.open(
            host: settings.host, port: settings.port, tls: settings.security == .implicitTLS ? tls : nil,
            connectTimeout: settings.connectTimeout, commandTimeout: settings.commandTimeout)
        do throws(SMTPError) {
            try await converse(mail, on: connection)
        } catch {
            await connection.close()
            throw error
        }
        await connection.quit()
    }

    /// Greeting, EHLO, STARTTLS, AUTH, MAIL FROM, RCPT TO, DATA.
    private func converse(_ mail: Mail, on connection: SMTPConnection) async throws(SMTPError) {
        let greeting = try await connection.greeting()
        guard greeting.code == 220 else { throw SMTPError.unexpected(greeting, to: "the connection") }
        var hello = try await expect(250, connection.command("EHLO \(settings.clientName)"), "EHLO")
        if settings.security == .startTLS, let tls {
            guard hello.extensions["STARTTLS"] != nil else {
                throw SMTPError(
                    .tlsFailed,
                    "\(settings.host) does not offer STARTTLS; use smtps:// if it speaks TLS from the start, "
                        + "or smtp+insecure:// for a relay on this machine")
            }
            let serverName = SMTPSettings.isIPAddress(settings.host) ? nil : settings.host
            let reply = try await connection.startTLS(tls, serverName: serverName)
            guard reply.code == 220 else { throw SMTPError.unexpected(reply, to: "STARTTLS", kind: .tlsFailed) }
            hello = try await expect(250, connection.command("EHLO \(settings.clientName)"), "EHLO after STARTTLS")
        }
        if let username = settings.username {
            try await authenticate(username, settings.password ?? "", offered: hello.extensions["AUTH"] ?? [], connection)
        }
        let message = try SMTPMessage(
            mail, from: settings.from, fromName: settings.fromName, date: clock.now(),
            messageID: RandomToken.hex(bytes: 16), eightBitAllowed: hello.extensions["8BITMIME"] != nil)
        var parameters = message.eightBit ? " BODY=8BITMIME" : ""
        if message.needsSMTPUTF8 {
            guard hello.extensions["SMTPUTF8"] != nil else {
                throw SMTPError(.invalidMessage, "the address is not ASCII and the server does not offer SMTPUTF8")
            }
            parameters += " SMTPUTF8"
        }
        try await expect(250, connection.command("MAIL FROM:<\(message.from)>\(parameters)"), "MAIL FROM")
        let recipient = try await connection.command("RCPT TO:<\(message.to)>")
        guard recipient.code == 250 || recipient.code == 251 else { throw SMTPError.unexpected(recipient, to: "RCPT TO") }
        try await expect(354, connection.command("DATA"), "DATA")
        try await expect(250, connection.data(message.data), "the message")
    }

    /// `AUTH PLAIN` when offered, else `AUTH LOGIN`; the secrets never reach an error message.
    private func authenticate(
        _ username: String, _ password: String, offered: [String], _ connection: SMTPConnection
    ) async throws(SMTPError) {
        func base64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }
        func refused(_ reply: SMTPReply) -> SMTPError {
            SMTPError(
                .authenticationFailed, "the server refused the user name or password: \(reply.summary)",
                replyCode: reply.code)
        }
        if offered.contains("PLAIN") {
            let reply = try await connection.command("AUTH PLAIN \(base64("\0\(username)\0\(password)"))")
            guard reply.code == 235 else { throw refused(reply) }
        } else if offered.contains("LOGIN") {
            for step in ["AUTH LOGIN", base64(username)] {
                let reply = try await connection.command(step)
                guard reply.code == 334 else { throw refused(reply) }
            }
            let reply = try await connection.command(base64(password))
            guard reply.code == 235 else { throw refused(reply) }
        } else {
            throw SMTPError(
                .authenticationFailed,
                "the server offers no sign-in mechanism Nimbus has (PLAIN, LOGIN); it offers "
                    + "\(SMTPReply.printable(offered.joined(separator: " "), limit: 100))")
        }
    }

    /// The reply, when its code is `code`; otherwise a `.rejected` error naming `step`.
    @discardableResult
    private func expect(_ code: Int, _ reply: SMTPReply, _ step: String) throws(SMTPError) -> SMTPReply {
        guard reply.code == code else { throw SMTPError.unexpected(reply, to: step) }
        return reply
    }
}
