import Foundation
import Nimbus
import NimbusProtocol
import Testing

@Suite struct AccountTests {
    @Test func signingUpVerifyingAndSigningInGivesAContainerOfTheUser() async throws {
        let mailBox = MailBox()
        try await LiveServer.withAccounts(mailBox) { live in
            let account = try await Account(container: live.anonymousContainer())
            let changes = await account.changes()
            try await live.register("ada@example.com", on: account, mailBox: mailBox)
            let user = try await account.signIn(email: "ada@example.com", password: "correct horse", deviceName: "laptop")
            #expect(try await nextChange(changes) == .signedIn(userRecordName: user))
            #expect(await account.userRecordName == user)
            // The container carries the user's token: their private database answers.
            let container = await account.container
            #expect(try await container.userRecordID().recordName == user)
            _ = try await container.privateCloudDatabase.allRecordZones()
            let sessions = try await account.sessions()
            #expect(sessions.count == 1)
            #expect(sessions.first?.isCurrent == true)
            #expect(sessions.first?.deviceName == "laptop")
        }
    }

    @Test func aWrongPasswordSignsNobodyIn() async throws {
        let mailBox = MailBox()
        try await LiveServer.withAccounts(mailBox) { live in
            let account = try await Account(container: live.anonymousContainer())
            try await live.register("ada@example.com", on: account, mailBox: mailBox)
            await #expect(throws: NimbusError.self) {
                try await account.signIn(email: "ada@example.com", password: "wrong horse")
            }
            #expect(await account.userRecordName == nil)
        }
    }

    @Test func refreshingReplacesTheTokenAndTheOldOneStopsWorking() async throws {
        let mailBox = MailBox()
        try await LiveServer.withAccounts(mailBox) { live in
            let account = try await Account(container: live.anonymousContainer())
            try await live.register("ada@example.com", on: account, mailBox: mailBox)
            let user = try await account.signIn(email: "ada@example.com", password: "correct horse")
            let before = await account.container
            let changes = await account.changes()
            try await account.refresh()
            #expect(try await nextChange(changes) == .tokenRefreshed(userRecordName: user))
            #expect(try await account.container.userRecordID().recordName == user)
            let old = live.anonymousContainer().with(credentials: before.credentials)
            await #expect(throws: NimbusError.self) { _ = try await old.userRecordID() }
        }
    }

    @Test func signingOutRevokesTheSessionOnTheServer() async throws {
        let mailBox = MailBox()
        try await LiveServer.withAccounts(mailBox) { live in
            let store = InMemorySessionStore()
            let account = try await Account(container: live.anonymousContainer(), sessionStore: store)
            try await live.register("ada@example.com", on: account, mailBox: mailBox)
            let user = try await account.signIn(email: "ada@example.com", password: "correct horse")
            #expect(try await store.load()?.userRecordName == user)
            let signedIn = await account.container
            let changes = await account.changes()
            try await account.signOut()
            #expect(try await nextChange(changes) == .signedOut(userRecordName: user))
            #expect(await account.userRecordName == nil)
            #expect(try await store.load() == nil)
            let error = await #expect(throws: NimbusError.self) { _ = try await signedIn.userRecordID() }
            #expect(error?.code == .notAuthenticated)
        }
    }

    @Test func aSessionRevokedFromAnotherDeviceSignsThisOneOut() async throws {
        let mailBox = MailBox()
        try await LiveServer.withAccounts(mailBox) { live in
            let phone = try await Account(container: live.anonymousContainer())
            let laptop = try await Account(container: live.anonymousContainer())
            try await live.register("ada@example.com", on: phone, mailBox: mailBox)
            let user = try await phone.signIn(email: "ada@example.com", password: "correct horse", deviceName: "phone")
            try await laptop.signIn(email: "ada@example.com", password: "correct horse", deviceName: "laptop")
            let phoneSession = try #require(await phone.session?.sessionID)
            let changes = await phone.changes()
            try await laptop.revoke(sessionID: phoneSession)
            #expect(try await laptop.sessions().map(\.deviceName) == ["laptop"])
            // The phone learns on its next request.
            let error = await #expect(throws: NimbusError.self) {
                _ = try await phone.container.privateCloudDatabase.allRecordZones()
            }
            #expect(error?.code == .notAuthenticated)
            #expect(try await nextChange(changes) == .signedOut(userRecordName: user))
            #expect(await phone.userRecordName == nil)
        }
    }

    @Test func anotherUserSigningInIsASwitch() async throws {
        let mailBox = MailBox()
        try await LiveServer.withAccounts(mailBox) { live in
            let account = try await Account(container: live.anonymousContainer())
            try await live.register("ada@example.com", on: account, mailBox: mailBox)
            try await live.register("bob@example.com", on: account, mailBox: mailBox)
            let ada = try await account.signIn(email: "ada@example.com", password: "correct horse")
            let adaContainer = await account.container
            let changes = await account.changes()
            let bob = try await account.signIn(email: "bob@example.com", password: "correct horse")
            #expect(ada != bob)
            #expect(try await nextChange(changes) == .switched(from: ada, to: bob))
            // Ada's session on this device is revoked on the server, not left behind.
            let error = await #expect(throws: NimbusError.self) { _ = try await adaContainer.userRecordID() }
            #expect(error?.code == .notAuthenticated)
            #expect(await account.userRecordName == bob, "a refused old token does not sign the new user out")
            #expect(try await account.container.userRecordID().recordName == bob)
        }
    }

    @Test func theWebFlowSignsInWithTheTokenTheRedirectCarries() async throws {
        let mailBox = MailBox()
        try await LiveServer.withAccounts(mailBox) { live in
            let account = try await Account(container: live.anonymousContainer())
            let url = account.webSignInURL(callbackURL: URL(string: "https://app.example/done")!)
            #expect(url.absoluteString.hasPrefix("\(live.baseURL.absoluteString)/signin/\(LiveServer.containerID)/development?redirect="))
            // The page redirects to the callback with a session's token; another sign-in stands in for it.
            let browser = try await Account(container: live.anonymousContainer())
            try await live.register("ada@example.com", on: browser, mailBox: mailBox)
            let user = try await browser.signIn(email: "ada@example.com", password: "correct horse")
            let token = try #require(await browser.session?.webAuthToken)
            let callback = URL(string: "https://app.example/done?ckWebAuthToken=\(token)")!
            #expect(try await account.completeWebSignIn(callbackURL: callback) == user)
            #expect(await account.session?.sessionID == browser.session?.sessionID)
            #expect(try await account.container.userRecordID().recordName == user)
            await #expect(throws: NimbusError.self) {
                try await account.completeWebSignIn(callbackURL: URL(string: "https://app.example/done")!)
            }
        }
    }

    @Test func aStoredSessionIsRestored() async throws {
        let mailBox = MailBox()
        try await LiveServer.withAccounts(mailBox) { live in
            let store = InMemorySessionStore()
            let first = try await Account(container: live.anonymousContainer(), sessionStore: store)
            try await live.register("ada@example.com", on: first, mailBox: mailBox)
            let user = try await first.signIn(email: "ada@example.com", password: "correct horse")
            let again = try await Account(container: live.anonymousContainer(), sessionStore: store)
            #expect(await again.userRecordName == user)
            #expect(try await again.container.userRecordID().recordName == user)
        }
    }
}
