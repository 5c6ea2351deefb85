/// Why a mail could not be handed to the SMTP server. Messages never hold the password or
/// the mail's body (its codes); a server's reply is shown cut to printable ASCII.
public struct SMTPError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, for code that reacts to it.
    public enum Kind: String, Sendable, Equatable {
        /// The SMTP URL or the sender's address is not usable.
        case invalidConfiguration
        /// An address or the subject holds a character SMTP cannot carry (CR, LF, `<`, `>`).
        case invalidMessage
        /// The TCP connection could not be opened.
        case connectionFailed
        /// The server did not answer in time.
        case timedOut
        /// The server closed the connection in the middle of the dialogue.
        case connectionClosed
        /// The server sent bytes that are not an SMTP reply.
        case malformedReply
        /// STARTTLS was required and the server does not offer it, or TLS failed.
        case tlsFailed
        /// The server refused the user name and password, or offers no mechanism Nimbus has.
        case authenticationFailed
        /// The server refused a command (sender, recipient, message).
        case rejected
    }

    public var kind: Kind
    public var message: String
    /// The server's reply code, when a reply caused the error.
    public var replyCode: Int?

    public init(_ kind: Kind, _ message: String, replyCode: Int? = nil) {
        self.kind = kind
        self.message = message
        self.replyCode = replyCode
    }

    public var description: String { "SMTP \(kind.rawValue): \(message)" }

    /// A reply that was not the one expected for `step`.
    static func unexpected(_ reply: SMTPReply, to step: String, kind: Kind = .rejected) -> SMTPError {
        SMTPError(kind, "the server answered \(reply.summary) to \(step)", replyCode: reply.code)
    }
}
