import Foundation
import Nimbus
import NimbusProtocol
import NimbusSync
import Testing

@Suite("A sync engine following an account")
struct AccountFollowingTests {
    static let configuration = SyncConfiguration(zones: ["ReadingList"], subscriptionID: nil)

    func bookmark(_ name: String, _ title: String) -> LocalRecord {
        LocalRecord(zoneName: "ReadingList", recordName: name, recordType: "Bookmark", fields: ["title": .string(title)])
    }

    static func isAccountChange(_ event: SyncEvent) -> Bool {
        if case .accountChanged = event { return true } else { return false }
    }

    static func isSignedIn(_ event: SyncEvent) -> Bool {
        if case .signedIn = event { return true } else { return false }
    }

    static func isSignedOut(_ event: SyncEvent) -> Bool {
        if case .signedOut = event { return true } else { return false }
    }

    @Test func anotherUserSigningInQuarantinesThePendingEditsInsteadOfSendingThemAsTheirs() async throws {
        let mailBox = MailBox()
        try await SyncHarness.withAccounts(mailBox) { harness in
            try await harness.register("ada@example.com", mailBox: mailBox)
            try await harness.register("bob@example.com", mailBox: mailBox)
            let account = try await Account(container: harness.anonymousContainer(device: "A"))
            let ada = try await account.signIn(email: "ada@example.com", password: "correct horse")
            let adaContainer = await account.container
            let engine = try await harness.engine("A", following: account, configuration: Self.configuration)
            try await engine.start()
            try engine.store.write { _, outbox in try outbox.save(bookmark("sent", "Ada's, sent")) }
            try await engine.sendChanges()
            try engine.store.write { _, outbox in try outbox.save(bookmark("unsent", "Ada's, not sent yet")) }

            let events = engine.events()
            let bob = try await account.signIn(email: "bob@example.com", password: "correct horse")
            let event = try await firstEvent(events, where: Self.isAccountChange)
            guard case .accountChanged(let from, let to) = event else { return }
            #expect(from == ada)
            #expect(to == bob)
            // Ada's data is in the quarantine, pending edit included; nothing of hers is left to send.
            #expect(try engine.store.records(inZone: "ReadingList").isEmpty)
            #expect(try engine.store.pendingCount() == 0)
            let quarantined = try engine.store.quarantined()
            #expect(quarantined.contains { $0.account == ada && $0.record.recordName == "unsent" && $0.pending })

            // The engine carries on as Bob, and Bob's database never sees Ada's edits.
            try await engine.start()
            try engine.store.write { _, outbox in try outbox.save(bookmark("bobs", "Bob's")) }
            try await engine.sendChanges()
            let bobContainer = await account.container
            #expect(try await serverRecordNames(bobContainer, zone: "ReadingList") == ["bobs"])
            // Ada's session on this device was revoked by the switch; from another device, her data is hers alone.
            let refused = await #expect(throws: NimbusError.self) { _ = try await adaContainer.userRecordID() }
            #expect(refused?.code == .notAuthenticated)
            let adaElsewhere = try await Account(container: harness.anonymousContainer(device: "B"))
            try await adaElsewhere.signIn(email: "ada@example.com", password: "correct horse")
            #expect(try await serverRecordNames(adaElsewhere.container, zone: "ReadingList") == ["sent"])
        }
    }

    @Test func signingOutStopsSendingAndTheSameUserSigningInAgainSendsThePendingEdits() async throws {
        let mailBox = MailBox()
        try await SyncHarness.withAccounts(mailBox) { harness in
            try await harness.register("ada@example.com", mailBox: mailBox)
            let account = try await Account(container: harness.anonymousContainer(device: "A"))
            try await account.signIn(email: "ada@example.com", password: "correct horse")
            let engine = try await harness.engine("A", following: account, configuration: Self.configuration)
            try await engine.start()
            try engine.store.write { _, outbox in try outbox.save(bookmark("kept", "written while signed in")) }

            let events = engine.events()
            try await account.signOut()
            _ = try await firstEvent(events, where: Self.isSignedOut)
            let error = await #expect(throws: NimbusError.self) { try await engine.sendChanges() }
            #expect(error?.code == .notAuthenticated)
            await #expect(throws: NimbusError.self) { try await engine.fetchChanges() }
            // Kept, unsent, not quarantined.
            #expect(try engine.store.pendingCount() == 1)
            #expect(try engine.store.quarantined().isEmpty)
            try engine.store.write { _, outbox in try outbox.save(bookmark("offline", "written while signed out")) }

            let resumed = engine.events()
            try await account.signIn(email: "ada@example.com", password: "correct horse")
            _ = try await firstEvent(resumed, where: Self.isSignedIn)
            try await engine.sendChanges()
            #expect(try engine.store.pendingCount() == 0)
            #expect(try engine.store.quarantined().isEmpty)
            #expect(try await serverRecordNames(account.container, zone: "ReadingList") == ["kept", "offline"])
        }
    }

    @Test func aDifferentUserAfterASignOutGetsNoneOfThePreviousUsersEdits() async throws {
        let mailBox = MailBox()
        try await SyncHarness.withAccounts(mailBox) { harness in
            try await harness.register("ada@example.com", mailBox: mailBox)
            try await harness.register("bob@example.com", mailBox: mailBox)
            let account = try await Account(container: harness.anonymousContainer(device: "A"))
            let ada = try await account.signIn(email: "ada@example.com", password: "correct horse")
            let engine = try await harness.engine("A", following: account, configuration: Self.configuration)
            try await engine.start()
            try engine.store.write { _, outbox in try outbox.save(bookmark("adas", "Ada's")) }
            let events = engine.events()
            try await account.signOut()
            _ = try await firstEvent(events, where: Self.isSignedOut)

            let bob = try await account.signIn(email: "bob@example.com", password: "correct horse")
            let event = try await firstEvent(events, where: Self.isAccountChange)
            guard case .accountChanged(let from, let to) = event else { return }
            #expect(from == ada)
            #expect(to == bob)
            try await engine.start()
            #expect(try await serverRecordNames(account.container, zone: "ReadingList").isEmpty)
            #expect(try engine.store.quarantined().contains { $0.account == ada && $0.record.recordName == "adas" })
        }
    }

    @Test func aSessionRevokedElsewhereStopsTheEngineWithItsEditsKept() async throws {
        let mailBox = MailBox()
        try await SyncHarness.withAccounts(mailBox) { harness in
            try await harness.register("ada@example.com", mailBox: mailBox)
            let account = try await Account(container: harness.anonymousContainer(device: "A"))
            try await account.signIn(email: "ada@example.com", password: "correct horse", deviceName: "phone")
            let engine = try await harness.engine("A", following: account, configuration: Self.configuration)
            try await engine.start()
            try engine.store.write { _, outbox in try outbox.save(bookmark("kept", "pending")) }

            let laptop = try await Account(container: harness.anonymousContainer(device: "B"))
            try await laptop.signIn(email: "ada@example.com", password: "correct horse", deviceName: "laptop")
            let phoneSession = try #require(await account.session?.sessionID)
            try await laptop.revoke(sessionID: phoneSession)

            let events = engine.events()
            // The send is refused; the account learns the session is gone and the engine stops.
            await #expect(throws: NimbusError.self) { try await engine.sendChanges() }
            _ = try await firstEvent(events, where: Self.isSignedOut)
            #expect(await account.userRecordName == nil)
            #expect(try engine.store.pendingCount() == 1)
            #expect(try engine.store.quarantined().isEmpty)
        }
    }
}
