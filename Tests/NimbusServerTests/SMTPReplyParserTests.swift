import NimbusProtocol
import NimbusServer
import Testing

/// What an SMTP server sends is hostile input: the reply parser reads good replies whole,
/// and anything else is an error, never a crash or an unbounded buffer.
@Suite("SMTP reply parser")
struct SMTPReplyParserTests {
    private func replies(_ text: String) throws -> [SMTPReply] {
        var parser = SMTPReplyParser()
        parser.append(Array(text.utf8))
        var found: [SMTPReply] = []
        while let reply = try parser.next() { found.append(reply) }
        return found
    }

    @Test func multiLineRepliesAreOneReplyAndBareLineFeedsAreTaken() throws {
        let found = try replies("250-mail.test hi\r\n250-AUTH PLAIN LOGIN\r\n250 8BITMIME\r\n220\n354 go on\r\n")
        #expect(found.map(\.code) == [250, 220, 354])
        #expect(found[0].lines == ["mail.test hi", "AUTH PLAIN LOGIN", "8BITMIME"])
        #expect(found[0].extensions["AUTH"] == ["PLAIN", "LOGIN"])
        #expect(found[1].lines == [""])
    }

    @Test func aReplyArrivingByteByByteIsReadOnceComplete() throws {
        var parser = SMTPReplyParser()
        var found: [SMTPReply] = []
        for byte in "250-first\r\n250 last\r\n".utf8 {
            parser.append([byte])
            if let reply = try parser.next() { found.append(reply) }
        }
        #expect(found == [SMTPReply(code: 250, lines: ["first", "last"])])
        #expect(!parser.hasUnreadBytes)
    }

    @Test(arguments: [
        "hello there\r\n", "25\r\n", "2x0 nope\r\n", "150 not an SMTP code\r\n", "600 too high\r\n",
        "250_odd separator\r\n", "250-first\r\n251 second code\r\n",
    ])
    func linesThatAreNoReplyAreErrors(text: String) {
        #expect(throws: SMTPError.self) { try replies(text) }
    }

    @Test func aLineWithoutEndOrAReplyWithoutEndIsBounded() throws {
        var parser = SMTPReplyParser()
        parser.append([UInt8](repeating: UInt8(ascii: "2"), count: SMTPReplyParser.maxLineBytes + 1))
        #expect(throws: SMTPError.self) { try parser.next() }
        let endless = String(repeating: "250-again\r\n", count: SMTPReplyParser.maxLines + 1)
        #expect(throws: SMTPError.self) { try replies(endless) }
    }

    @Test func randomBytesNeverCrashTheParser() {
        var random = SplitMix64(seed: 0x5A17_0017)
        let alphabet = Array("0123456789 -\r\n25ABC\u{0}\u{FF}".utf8)
        var parsed = 0
        var refused = 0
        for _ in 0..<2_000 {
            var parser = SMTPReplyParser()
            let length = random.int(0...600)
            let bytes = (0..<length).map { _ in
                random.chance(0.8) ? alphabet[random.int(0..<alphabet.count)] : UInt8(truncatingIfNeeded: random.next())
            }
            var offset = 0
            do {
                while offset < bytes.count {
                    let chunk = min(bytes.count - offset, random.int(1...64))
                    parser.append(bytes[offset..<offset + chunk])
                    offset += chunk
                    while let reply = try parser.next() {
                        #expect((200...599).contains(reply.code))
                        #expect(reply.lines.count <= SMTPReplyParser.maxLines)
                        parsed += 1
                    }
                }
            } catch {
                refused += 1
            }
        }
        #expect(parsed > 0 && refused > 0, "the seed should exercise both outcomes")
    }
}
