/// One SMTP reply (RFC 5321 §4.2): a three-digit code and the text of each of its lines,
/// `250-first`, `250-second`, `250 last` making one reply with three lines.
package struct SMTPReply: Sendable, Equatable {
    package var code: Int
    package var lines: [String]

    package init(code: Int, lines: [String]) {
        self.code = code
        self.lines = lines
    }

    /// 2xx: the command was done.
    package var isPositive: Bool { (200..<300).contains(code) }

    /// The EHLO keywords the server announced, uppercased (`STARTTLS`, `AUTH`, `8BITMIME`),
    /// each with its parameters (`AUTH` → `["PLAIN", "LOGIN"]`). The first line is the greeting.
    package var extensions: [String: [String]] {
        var found: [String: [String]] = [:]
        for line in lines.dropFirst() {
            let words = line.split(separator: " ").map { $0.uppercased() }
            guard let keyword = words.first else { continue }
            found[keyword] = Array(words.dropFirst())
        }
        return found
    }

    /// The reply as an error message may show it: printable ASCII only, at most 200 characters.
    package var summary: String { "\(code) \(Self.printable(lines.joined(separator: " / "), limit: 200))" }

    /// `text` with everything but printable ASCII replaced by `?`, cut to `limit` characters.
    static func printable(_ text: String, limit: Int) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(limit).map { (0x20..<0x7F).contains($0.value) ? $0 : "?" }))
    }
}

/// Cuts the bytes an SMTP server sends into replies. Every byte is treated as hostile: a line
/// longer than ``maxLineBytes``, a reply of more than ``maxLines`` lines, a line that does not
/// start with a code from 200 to 599 followed by `-`, a space or its end, or a continuation
/// line with another code is a ``SMTPError`` (`.malformedReply`), never a crash. Lines end in
/// CRLF; a bare LF is taken too.
package struct SMTPReplyParser: Sendable {
    /// RFC 5321 allows reply lines of 512 bytes; servers' texts sometimes run longer.
    package static let maxLineBytes = 2048
    package static let maxLines = 128

    package init() {}

    private var buffer: [UInt8] = []
    /// Where the unread bytes of `buffer` start.
    private var start = 0
    private var code: Int?
    private var lines: [String] = []

    /// Whether bytes past the last complete reply are waiting (after a STARTTLS `220`,
    /// any are an injection attempt).
    package var hasUnreadBytes: Bool { start < buffer.count || !lines.isEmpty }

    /// Adds bytes as they arrived.
    package mutating func append(_ bytes: some Sequence<UInt8>) {
        if start > 0, start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete reply, or `nil` until more bytes arrive.
    package mutating func next() throws(SMTPError) -> SMTPReply? {
        while true {
            guard let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) else {
                guard buffer.count - start <= Self.maxLineBytes else {
                    throw SMTPError(.malformedReply, "the server sent a line longer than \(Self.maxLineBytes) bytes")
                }
                return nil
            }
            var end = newline
            if end > start, buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
            let line = buffer[start..<end]
            start = newline + 1
            guard line.count <= Self.maxLineBytes else {
                throw SMTPError(.malformedReply, "the server sent a line longer than \(Self.maxLineBytes) bytes")
            }
            if let reply = try take(line) { return reply }
        }
    }

    /// Adds one line to the reply being read; the reply when the line was its last.
    private mutating func take(_ line: ArraySlice<UInt8>) throws(SMTPError) -> SMTPReply? {
        let bytes = Array(line)
        guard bytes.count >= 3, let code = Self.code(bytes[0], bytes[1], bytes[2]) else {
            throw SMTPError(.malformedReply, "the server sent a line that is not a reply: \(Self.quoted(bytes))")
        }
        let last: Bool
        switch bytes.count == 3 ? nil : bytes[3] {
        case nil, UInt8(ascii: " "): last = true
        case UInt8(ascii: "-"): last = false
        default: throw SMTPError(.malformedReply, "the server sent a line that is not a reply: \(Self.quoted(bytes))")
        }
        if let current = self.code, current != code {
            throw SMTPError(.malformedReply, "a reply's lines carry two codes, \(current) and \(code)")
        }
        guard lines.count < Self.maxLines else {
            throw SMTPError(.malformedReply, "the server sent a reply of more than \(Self.maxLines) lines")
        }
        self.code = code
        lines.append(String(decoding: bytes.dropFirst(4), as: UTF8.self))
        guard last else { return nil }
        defer { (self.code, lines) = (nil, []) }
        return SMTPReply(code: code, lines: lines)
    }

    /// The code of three ASCII digits, when it is one SMTP uses (200 to 599).
    private static func code(_ a: UInt8, _ b: UInt8, _ c: UInt8) -> Int? {
        let digits = [a, b, c].map { Int($0) - Int(UInt8(ascii: "0")) }
        guard digits.allSatisfy({ (0...9).contains($0) }), (2...5).contains(digits[0]) else { return nil }
        return digits[0] * 100 + digits[1] * 10 + digits[2]
    }

    /// The start of a line as an error may show it.
    private static func quoted(_ bytes: [UInt8]) -> String {
        "'\(SMTPReply.printable(String(decoding: bytes.prefix(60), as: UTF8.self), limit: 60))'"
    }
}
