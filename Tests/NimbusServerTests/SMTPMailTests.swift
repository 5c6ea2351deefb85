import Foundation
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusTestSupport
import Testing

/// Built-in accounts' mail over SMTP, against a fake SMTP server on a loopback port: the
/// codes arrive, a failing mail server is a clear TRY_AGAIN_LATER (the same whatever the
/// address) and the server keeps serving.
@Suite("SMTP mail")
struct SMTPMailTests {
    static let relayUser = "nimbus-relay"
    static let relayPassword = "relay-secret-42"

    /// The 16-hex-digit code in a mail's body.
    static func code(in body: String) -> String? {
        body.split(whereSeparator: { !$0.isHexDigit }).last { $0.count == 16 }.map(String.init)
    }

    @Test(arguments: Engine.available)
    func verificationAndPasswordResetMailArriveOverSMTP(engine: Engine) async throws {
        try await FakeSMTPServer.with(.accept(user: Self.relayUser, password: Self.relayPassword)) { smtp in
            let sender = try SMTPMailSender(
                settings: smtp.settings(user: Self.relayUser, password: Self.relayPassword), logger: TestServer.quietLogger)
            try await TestServer.withSignIn(engine, outbox: sender) { server in
                try await server.enablePasswords()
                let anonymous = server.anonymous()
                let email = "hana@example.com"
                let signUp = try await anonymous.post(
                    "accounts/signup", ["email": .string(email), "password": "correct horse"], scope: "public")
                #expect(signUp["status"] == "CHECK_MAIL")
                let verification = try #require(smtp.lastMail(to: email))
                #expect(verification.from == "nimbus@example.com")
                #expect(verification.header("From") == "\"Nimbus\" <nimbus@example.com>")
                #expect(verification.header("Subject") == "Your verification code")
                #expect(smtp.commands.contains { $0.hasPrefix("AUTH PLAIN ") })
                let code = try #require(Self.code(in: verification.body))
                #expect(verification.body.contains("/signin/\(TestServer.container)/development/verify?email="))
                #expect(verification.body.contains("code=\(code)"))
                let verified = try await anonymous.post(
                    "accounts/verify", ["email": .string(email), "code": .string(code)], scope: "public")
                #expect(verified["status"] == "VERIFIED")

                let forgot = try await anonymous.post("accounts/password/forgot", ["email": .string(email)], scope: "public")
                #expect(forgot["status"] == "CHECK_MAIL")
                let reset = try #require(smtp.lastMail(to: email))
                #expect(reset.header("Subject") == "Your password reset code")
                let resetCode = try #require(Self.code(in: reset.body))
                let done = try await anonymous.post(
                    "accounts/password/reset",
                    ["email": .string(email), "code": .string(resetCode), "password": "battery staple"], scope: "public")
                #expect(done["status"] == "PASSWORD_SET")
                let signIn = try await anonymous.post(
                    "accounts/signin", ["email": .string(email), "password": "battery staple"], scope: "public")
                #expect(signIn.status == 200)
            }
        }
    }

    /// The mail servers that fail, one way each.
    static let failingServers: [FakeSMTPServer.Behaviour] = [
        .refuse(verb: "RCPT", code: 550), .refuse(verb: "DATA", code: 451), .garbageGreeting, .closeAt(verb: "DATA"),
        .closeAt(verb: "EHLO"), .silent, .accept(user: "someone", password: "else"),
    ]

    @Test(arguments: failingServers)
    func aFailingMailServerIsTryAgainLaterAndTheServerKeepsServing(behaviour: FakeSMTPServer.Behaviour) async throws {
        try await FakeSMTPServer.with(behaviour) { smtp in
            let log = LogCapture()
            // Only the server that wants a password gets one (the others would fail at AUTH, not where they mean to).
            let signsIn = if case .accept = behaviour { true } else { false }
            let sender = try SMTPMailSender(
                settings: smtp.settings(
                    user: signsIn ? Self.relayUser : nil, password: signsIn ? Self.relayPassword : nil,
                    commandTimeout: .milliseconds(300)),
                logger: log.logger)
            try await TestServer.withSignIn(.sqlite, outbox: sender) { server in
                try await server.enablePasswords()
                let anonymous = server.anonymous()
                let signUp = try await anonymous.post(
                    "accounts/signup", ["email": "ivy@example.com", "password": "correct horse"], scope: "public")
                #expect(signUp.status == 503)
                #expect(signUp.serverErrorCode == "TRY_AGAIN_LATER")
                #expect(signUp["retryAfter"]?.int64 == 60)
                let logged = try await log.first { $0.contains("mail not sent") }
                #expect(logged.contains("ivy@example.com"))
                #expect(!logged.contains(Self.relayPassword))
                // "Forgot password" fails alike for an address without an account: nothing tells them apart.
                let forgot = try await anonymous.post(
                    "accounts/password/forgot", ["email": "nobody@example.com"], scope: "public")
                #expect(forgot.status == 503)
                #expect(forgot["reason"] == signUp["reason"])
                // The sign-in page's sign-up says so too: a 503 page that says when to try again.
                let browser = FormBrowser()
                let page = "\(server.server.baseURL)/signin/\(TestServer.container)/development/signup"
                let answer: FormBrowser.Page
                do {
                    let cookie = try await browser.get(page).csrfCookie ?? ""
                    answer = try await browser.post(
                        page, form: [("csrf", cookie), ("email", "ivy@example.com"), ("password", "correct horse")],
                        cookie: cookie)
                } catch {
                    try? await browser.shutdown()
                    throw error
                }
                try await browser.shutdown()
                #expect(answer.status == 503)
                #expect(answer.headers["Retry-After"].first == "60")
                let alice = try await server.user("alice")
                #expect(try await alice.get("users/current").status == 200)
            }
        }
    }

    @Test func theBodyIsDotStuffedAndNoHeaderOrCommandCanBeInjected() async throws {
        try await FakeSMTPServer.with(.accept()) { smtp in
            let sender = try SMTPMailSender(settings: smtp.settings(), logger: TestServer.quietLogger)
            try await sender.send(Mail(to: "jo@example.com", subject: "Dots", body: ".hidden\n.\nend\r\n..two"))
            let mail = try #require(smtp.lastMail(to: "jo@example.com"))
            #expect(mail.body == ".hidden\n.\nend\n..two")
            #expect(mail.rawLines.suffix(4) == ["..hidden", "..", "end", "...two"])
            let hostile = [
                Mail(to: "jo@example.com", subject: "Hi\r\nBcc: evil@example.com", body: "x"),
                Mail(to: "jo@example.com>\r\nRCPT TO:<evil@example.com", subject: "Hi", body: "x"),
                Mail(to: "jo@example.com\nevil", subject: "Hi", body: "x"),
            ]
            for mail in hostile {
                await #expect(throws: SMTPError.self) { try await sender.send(mail) }
            }
            #expect(smtp.connections == 1, "a refused mail never reaches the server")
            #expect(!smtp.commands.contains { $0.contains("evil") })
        }
    }

    @Test func anAddressOrSubjectThatIsNotASCIIIsCarriedAsSMTPUTF8AndEncodedWords() async throws {
        try await FakeSMTPServer.with(.accept()) { smtp in
            let sender = try SMTPMailSender(settings: smtp.settings(), logger: TestServer.quietLogger)
            try await sender.send(Mail(to: "zoë@example.com", subject: "Grüße", body: "Schöne Grüße"))
            let mail = try #require(smtp.lastMail(to: "zoë@example.com"))
            #expect(smtp.commands.contains { $0.hasPrefix("MAIL FROM:<nimbus@example.com>") && $0.hasSuffix("SMTPUTF8") })
            #expect(mail.header("Subject") == "=?UTF-8?B?\(Data("Grüße".utf8).base64EncodedString())?=")
            #expect(mail.header("Content-Transfer-Encoding") == "8bit")
            #expect(mail.body == "Schöne Grüße")
        }
    }

    @Test func authLoginIsUsedWhenPlainIsNotOffered() async throws {
        try await FakeSMTPServer.with(.accept(user: Self.relayUser, password: Self.relayPassword, mechanisms: "LOGIN")) {
            smtp in
            let sender = try SMTPMailSender(
                settings: smtp.settings(user: Self.relayUser, password: Self.relayPassword), logger: TestServer.quietLogger)
            try await sender.send(Mail(to: "kim@example.com", subject: "Hello", body: "hello"))
            #expect(smtp.commands.contains("AUTH LOGIN"))
            #expect(smtp.lastMail(to: "kim@example.com") != nil)
        }
    }

    @Test func aRefusedPasswordIsAnAuthenticationErrorThatDoesNotShowIt() async throws {
        try await FakeSMTPServer.with(.accept(user: Self.relayUser, password: Self.relayPassword)) { smtp in
            let sender = try SMTPMailSender(
                settings: smtp.settings(user: Self.relayUser, password: "wrong-secret-99"), logger: TestServer.quietLogger)
            let error = await #expect(throws: SMTPError.self) {
                try await sender.send(Mail(to: "lee@example.com", subject: "Hello", body: "hello"))
            }
            #expect(error?.kind == .authenticationFailed)
            #expect(error?.replyCode == 535)
            #expect(!"\(String(describing: error))".contains("wrong-secret-99"))
            #expect(!smtp.commands.contains { $0.hasPrefix("MAIL") })
        }
    }

    @Test func startTLSThatIsNotOfferedOrAnswersWithInjectedBytesIsRefused() async throws {
        for behaviour: FakeSMTPServer.Behaviour in [.accept(), .startTLSInjection] {
            try await FakeSMTPServer.with(behaviour) { smtp in
                var settings = smtp.settings()
                settings.security = .startTLS
                let sender = try SMTPMailSender(settings: settings, logger: TestServer.quietLogger)
                let error = await #expect(throws: SMTPError.self) {
                    try await sender.send(Mail(to: "max@example.com", subject: "Hello", body: "hello"))
                }
                #expect(error?.kind == .tlsFailed)
                #expect(!smtp.commands.contains { $0.hasPrefix("MAIL") })
            }
        }
    }

    @Test func smtpURLsSayHowToConnect() throws {
        let startTLS = try SMTPSettings(url: "smtp://relay:p%40ss@mail.example.com", from: "nimbus@example.com")
        #expect(startTLS.security == .startTLS && startTLS.port == 587 && startTLS.host == "mail.example.com")
        #expect(startTLS.username == "relay" && startTLS.password == "p@ss")
        let implicit = try SMTPSettings(url: "smtps://relay@mail.example.com", from: "n@example.com", password: "from-env")
        #expect(implicit.security == .implicitTLS && implicit.port == 465 && implicit.password == "from-env")
        let local = try SMTPSettings(url: "smtp+insecure://relay:pw@127.0.0.1:2525", from: "n@example.com")
        #expect(local.security == SMTPSettings.Security.none && local.port == 2525)
        for (url, from) in [
            ("smtp+insecure://relay:pw@mail.example.com", "n@example.com"), ("http://mail.example.com", "n@example.com"),
            ("smtp://mail.example.com/path", "n@example.com"), ("smtp://:pw@mail.example.com", "n@example.com"),
            ("smtp://mail.example.com", "not an address"), ("smtp://mail.example.com", "a@b.c\r\nBcc: x@y.z"),
        ] {
            #expect(throws: SMTPError.self, "\(url) from \(from)") { try SMTPSettings(url: url, from: from) }
        }
    }

    @Test func theMailSendersLineCarriesTheRequestsID() async throws {
        try await FakeSMTPServer.with(.accept(user: Self.relayUser, password: Self.relayPassword)) { smtp in
            let recorder = LineRecorder()
            let sender = try SMTPMailSender(
                settings: smtp.settings(user: Self.relayUser, password: Self.relayPassword), logger: recorder.logger())
            try await TestServer.withSignIn(.sqlite, outbox: sender) { server in
                try await server.enablePasswords()
                let signUp = try await server.anonymous().post(
                    "accounts/signup", ["email": "ida@example.com", "password": "correct horse"], scope: "public",
                    headers: [("X-Request-ID", "signup-7f3a")])
                #expect(signUp["status"] == "CHECK_MAIL")
            }
            let sent = recorder.recorded.filter { $0.contains("mail sent") }
            #expect(sent.count == 1)
            #expect(sent.allSatisfy { $0.contains("request_id=signup-7f3a") }, "\(sent)")
        }
    }
}
