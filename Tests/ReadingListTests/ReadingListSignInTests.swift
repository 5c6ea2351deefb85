import Foundation
import NimbusServer
import NimbusStore
import NimbusSync
import NimbusTestSupport
import ReadingList
import Testing

/// Keeps the mails the server sends, for tests to read the codes.
actor MailBox: MailSender {
    private(set) var mails: [Mail] = []

    func send(_ mail: Mail) async throws { mails.append(mail) }

    /// The 16-hex-digit code in the last mail to `address`.
    func lastCode(to address: String) -> String? {
        guard let body = mails.last(where: { $0.to == address })?.body else { return nil }
        return body.split(whereSeparator: { !$0.isHexDigit }).last { $0.count == 16 }.map(String.init)
    }
}

/// `reading-list signup`, `verify`, `signin` and `signout` against a real server.
@Suite("reading-list sign-in", .timeLimit(.minutes(10)))
struct ReadingListSignInTests {
    func commands(_ log: OutputLog) -> ReadingListCommands {
        ReadingListCommands(output: { log.append($0) })
    }

    func withAccounts(_ mailBox: MailBox, _ body: (TestWorld) async throws -> Void) async throws {
        try await TestWorld.with(configure: {
            $0.signIn.passwordCost = 10
            $0.signIn.mailSender = mailBox
        }) { world in
            try await world.server.store.setSignInSettings(ContainerSignInSettings(passwords: true), container: world.container)
            try await body(world)
        }
    }

    /// `init` without a token, then `signup`, `verify` and `signin` as `email`.
    func signedInDevice(_ world: TestWorld, _ name: String, _ email: String, mailBox: MailBox, log: OutputLog)
        async throws -> String
    {
        let directory = world.deviceDirectory(name)
        try await commands(log).initialize(
            directory: directory, serverURL: world.server.baseURL, container: world.container, apiToken: world.apiToken)
        if await mailBox.lastCode(to: email) == nil {
            try await commands(log).signUp(directory: directory, email: email, password: "correct horse")
            let code = try #require(await mailBox.lastCode(to: email))
            try await commands(log).verify(directory: directory, email: email, code: code)
        }
        try await commands(log).signIn(directory: directory, email: email, password: "correct horse")
        return directory
    }

    @Test func signingInReplacesTheOperatorMadeToken() async throws {
        let mailBox = MailBox()
        try await withAccounts(mailBox) { world in
            let log = OutputLog()
            let a = try await signedInDevice(world, "A", "ada@example.com", mailBox: mailBox, log: log)
            #expect(log.text.contains("Nobody is signed in"))
            #expect(log.text.contains("Signed in as ada@example.com"))
            #expect(log.text.contains("Synced with"))
            #expect(FileManager.default.fileExists(atPath: (a as NSString).appendingPathComponent(Device.sessionFile)))
            try await commands(log).add(directory: a, url: "https://news.example.com/one", title: "One")

            // Another device of Ada's sees it; the operator-made user ("reader") does not.
            let b = try await signedInDevice(world, "B", "ada@example.com", mailBox: mailBox, log: OutputLog())
            #expect(try Device.open(directory: b).readingList.bookmarks().map(\.title) == ["One"])
            let reader = OutputLog()
            try await commands(reader).initialize(
                directory: world.deviceDirectory("R"), serverURL: world.server.baseURL, container: world.container,
                apiToken: world.apiToken, webAuthToken: world.webAuthToken)
            #expect(try Device.open(directory: world.deviceDirectory("R")).readingList.bookmarks().isEmpty)
        }
    }

    @Test func anotherUserSigningInOnADeviceDoesNotGetThePreviousUsersList() async throws {
        let mailBox = MailBox()
        try await withAccounts(mailBox) { world in
            let log = OutputLog()
            let a = try await signedInDevice(world, "A", "ada@example.com", mailBox: mailBox, log: log)
            try await commands(log).add(directory: a, url: "https://news.example.com/adas", title: "Ada's", offline: true)
            try await commands(log).signOut(directory: a)
            #expect(log.text.contains("Signed out"))
            #expect(!FileManager.default.fileExists(atPath: (a as NSString).appendingPathComponent(Device.sessionFile)))

            try await commands(log).signUp(directory: a, email: "bob@example.com", password: "correct horse")
            try await commands(log).verify(
                directory: a, email: "bob@example.com", code: try #require(await mailBox.lastCode(to: "bob@example.com")))
            try await commands(log).signIn(directory: a, email: "bob@example.com", password: "correct horse")
            let device = try Device.open(directory: a)
            #expect(try device.readingList.bookmarks().isEmpty)
            #expect(try device.engine.store.quarantined().contains { $0.pending })
            // Bob's second device: nothing of Ada's reached Bob's database.
            let b = try await signedInDevice(world, "B", "bob@example.com", mailBox: mailBox, log: OutputLog())
            #expect(try Device.open(directory: b).readingList.bookmarks().isEmpty)
        }
    }
}
