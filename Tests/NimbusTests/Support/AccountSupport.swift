import Foundation
import Nimbus
import NimbusServer
import NimbusStore
import NimbusTestSupport

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

extension LiveServer {
    /// Runs `body` against a server whose built-in accounts are on for the container (hashing
    /// at a low cost), mailing `mailBox`.
    static func withAccounts<T: Sendable>(
        _ mailBox: MailBox, origins: [String] = ["https://app.example"], _ body: (LiveServer) async throws -> T
    ) async throws -> T {
        try await with(configure: {
            $0.signIn.passwordCost = 10
            $0.signIn.mailSender = mailBox
        }) { live in
            try await live.server.store.setSignInSettings(
                ContainerSignInSettings(passwords: true, redirectOrigins: origins), container: containerID)
            return try await body(live)
        }
    }

    /// Signs `email` up and verifies it through `account`.
    func register(_ email: String, password: String = "correct horse", on account: Account, mailBox: MailBox) async throws {
        try await account.signUp(email: email, password: password)
        let code = await mailBox.lastCode(to: email) ?? ""
        try await account.verify(email: email, code: code)
    }
}

/// Collects an account's changes, for tests to await them.
func nextChange(
    _ changes: AsyncStream<AccountChange>, timeout: Duration = .seconds(60)
) async throws -> AccountChange {
    try await withThrowingTaskGroup(of: AccountChange?.self) { group in
        group.addTask {
            var iterator = changes.makeAsyncIterator()
            return await iterator.next()
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let change = first else { throw CancellationError() }
        return change
    }
}
