import Foundation
import Nimbus
import NimbusServer
import NimbusStore
import NimbusSync
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

extension SyncHarness {
    /// Runs `body` with a harness whose container has built-in accounts, mailing `mailBox`.
    static func withAccounts<T>(_ mailBox: MailBox, _ body: (SyncHarness) async throws -> T) async throws -> T {
        try await with(configure: {
            $0.signIn.passwordCost = 10
            $0.signIn.mailSender = mailBox
        }) { harness in
            try await harness.server.store.setSignInSettings(
                ContainerSignInSettings(passwords: true), container: containerID)
            return try await body(harness)
        }
    }

    /// The container with the API token only, for an ``Account``.
    func anonymousContainer(device: String) -> Container {
        Container(
            identifier: Self.containerID, baseURL: URL(string: server.baseURL)!, credentials: .apiToken(apiToken),
            deviceID: device)
    }

    /// Signs `email` up and verifies it.
    func register(_ email: String, mailBox: MailBox) async throws {
        let account = try await Account(container: anonymousContainer(device: "signup"))
        try await account.signUp(email: email, password: "correct horse")
        try await account.verify(email: email, code: await mailBox.lastCode(to: email) ?? "")
    }

    /// An engine for `device` over its local store, following `account`, with `service`
    /// wrapping the service of each signed-in container.
    func engine(_ device: String, following account: Account, configuration: SyncConfiguration) async throws -> SyncEngine {
        let engine = SyncEngine(
            service: DatabaseSyncService(database: await account.container.privateCloudDatabase),
            store: try LocalStore(path: storePath(device), clock: Self.noWaiting), configuration: configuration)
        try await engine.follow(account)
        return engine
    }
}

/// The record names in a user's private zone on the server (none when the zone does not exist).
func serverRecordNames(_ container: Container, zone: String) async throws -> Set<String> {
    do {
        let changes = try await container.privateCloudDatabase.recordZoneChanges(inZoneWith: ZoneID(zoneName: zone), since: nil)
        return Set(changes.modifications.map(\.id.recordName))
    } catch let error as NimbusError where error.code == .zoneNotFound {
        return []
    }
}
