import Logging

/// A mail the server sends a user: a verification or password reset code.
public struct Mail: Sendable, Equatable {
    public var to: String
    public var subject: String
    public var body: String

    public init(to: String, subject: String, body: String) {
        self.to = to
        self.subject = subject
        self.body = body
    }
}

/// The one seam through which the server sends mail. Set one on
/// ``SignInSettings/mailSender``: ``SMTPMailSender`` (`nimbus serve --smtp-url`), or your own;
/// without one, mail is written to the server log.
///
/// A sender that throws makes the request that wanted the mail answer TRY_AGAIN_LATER; it
/// should log why itself, without secrets.
public protocol MailSender: Sendable {
    /// Sends `mail`; throws when it could not be handed over.
    func send(_ mail: Mail) async throws
}

/// Writes each mail, codes and links included, to the log at `notice`: for development and
/// for operators who relay codes themselves. Anyone who reads the log can sign in as the
/// recipient; use a real sender in production.
public struct LoggingMailSender: MailSender {
    let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    public func send(_ mail: Mail) async throws {
        logger.notice(
            "mail (not sent: no mail sender configured)",
            metadata: RequestID.tagged(["to": "\(mail.to)", "subject": "\(mail.subject)", "body": "\(mail.body)"]))
    }
}
