import Foundation

/// One mail as SMTP carries it: the envelope addresses and the bytes sent after `DATA`
/// (headers, a blank line, the body dot-stuffed, the closing `.` line).
///
/// Nothing the caller gives can add a header or end the data early: addresses and the
/// subject holding CR, LF or other control characters are refused, the body's lines are
/// re-ended with CRLF and every line starting with `.` gets a second one (RFC 5321 §4.5.2).
struct SMTPMessage: Sendable {
    var from: String
    var to: String
    /// The body carries bytes above 0x7F as they are: `MAIL FROM` needs `BODY=8BITMIME`.
    var eightBit: Bool
    /// An address is not ASCII: `MAIL FROM` needs `SMTPUTF8`.
    var needsSMTPUTF8: Bool
    var data: [UInt8]

    /// The longest line SMTP carries, CRLF not counted (RFC 5321 §4.5.3.1.6).
    static let maxLineBytes = 998

    /// - Parameters:
    ///   - eightBitAllowed: the server announced `8BITMIME`; otherwise a body that is not ASCII
    ///     goes as base64.
    init(
        _ mail: Mail, from: String, fromName: String?, date: Date, messageID: String, eightBitAllowed: Bool
    ) throws(SMTPError) {
        self.from = try Self.checked(address: from, role: "sender")
        self.to = try Self.checked(address: mail.to, role: "recipient")
        needsSMTPUTF8 = !(self.from + self.to).allSatisfy(\.isASCII)
        let lines = Self.lines(of: mail.body)
        let ascii = mail.body.allSatisfy(\.isASCII)
        let encoding: String
        if lines.contains(where: { $0.utf8.count > Self.maxLineBytes }) || (!ascii && !eightBitAllowed) {
            encoding = "base64"
        } else {
            encoding = ascii ? "7bit" : "8bit"
        }
        eightBit = encoding == "8bit"
        let sender = try Self.mailbox(self.from, name: fromName)
        let subject = try Self.headerText(mail.subject, field: "subject")
        var header = [
            "From: \(sender)",
            "To: <\(self.to)>",
            "Subject: \(subject)",
            "Date: \(Self.format(date))",
            "Message-ID: <\(messageID)@\(self.from.split(separator: "@").last ?? "nimbus")>",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: \(encoding)",
            "Auto-Submitted: auto-generated",
        ]
        header.append("")
        let body =
            encoding == "base64"
            ? Self.wrap(Data(lines.joined(separator: "\r\n").utf8).base64EncodedString(), every: 76)
            : lines.map { $0.hasPrefix(".") ? "." + $0 : $0 }
        data = Array((header + body + ["."]).joined(separator: "\r\n").utf8) + Array("\r\n".utf8)
    }

    /// An envelope address: 3 to 254 bytes, one `@` with something on each side, no spaces,
    /// control characters or angle brackets.
    static func checked(address: String, role: String) throws(SMTPError) -> String {
        let parts = address.split(separator: "@", omittingEmptySubsequences: false)
        guard address.utf8.count >= 3, address.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty,
            !address.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F || $0 == "<" || $0 == ">" })
        else {
            throw SMTPError(
                .invalidMessage, "the \(role) address '\(SMTPReply.printable(address, limit: 80))' cannot be sent over SMTP")
        }
        return address
    }

    /// `"Name" <address>`, the name quoted (or RFC 2047-encoded when it is not ASCII).
    private static func mailbox(_ address: String, name: String?) throws(SMTPError) -> String {
        guard let name, !name.isEmpty else { return "<\(address)>" }
        let text = try headerText(name, field: "sender name")
        let quoted = !name.allSatisfy(\.isASCII) ? text : "\"" + text.replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "\"", with: "\\\"") + "\""
        return "\(quoted) <\(address)>"
    }

    /// A header's text as it goes on the wire: refused when it holds a control character,
    /// ASCII as it is, anything else as UTF-8 encoded words (RFC 2047) folded onto lines.
    static func headerText(_ text: String, field: String) throws(SMTPError) -> String {
        guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }), text.utf8.count <= 900
        else { throw SMTPError(.invalidMessage, "the \(field) holds a line break or control character, or is too long") }
        guard !text.allSatisfy(\.isASCII) else { return text }
        var words: [String] = []
        var chunk = ""
        for character in text {
            if chunk.utf8.count + character.utf8.count > 45 {
                words.append(chunk)
                chunk = ""
            }
            chunk.append(character)
        }
        words.append(chunk)
        return words.map { "=?UTF-8?B?\(Data($0.utf8).base64EncodedString())?=" }.joined(separator: "\r\n ")
    }

    /// The body's lines, whatever ended them (CRLF, LF or CR).
    private static func lines(of body: String) -> [String] {
        body.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    private static func wrap(_ text: String, every width: Int) -> [String] {
        stride(from: 0, to: text.count, by: width).map { offset in
            let start = text.index(text.startIndex, offsetBy: offset)
            return String(text[start..<(text.index(start, offsetBy: width, limitedBy: text.endIndex) ?? text.endIndex)])
        }
    }

    /// An RFC 5322 date in UTC: `Tue, 24 Nov 2026 01:02:03 +0000`.
    static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss Z"
        return formatter.string(from: date)
    }
}
