import Foundation
import Nimbus
import NimbusKeyValue
import NimbusSync
import Testing

/// The key-value store when the signed-in account changes: the previous user's keys leave the
/// device, the change stream says so (`NSUbiquitousKeyValueStoreAccountChange`), and the new
/// user's keys arrive with the next sync.
@Suite("Key-value store and the account")
struct KeyValueAccountTests {
    @Test func anotherUserSigningInAfterASignOutIsAnAccountChange() async throws {
        let mailBox = MailBox()
        try await SyncHarness.withAccounts(mailBox) { harness in
            try await harness.register("ada@example.com", mailBox: mailBox)
            try await harness.register("bob@example.com", mailBox: mailBox)
            // Bob's key, written from a device of his.
            let bobsPhone = try await Account(container: harness.anonymousContainer(device: "bobs-phone"))
            try await bobsPhone.signIn(email: "bob@example.com", password: "correct horse")
            let bobs = try KeyValueStore(
                engine: try await harness.engine("bobs-phone", following: bobsPhone, configuration: KeyValueStore.configuration()),
                sendsAutomatically: false)
            try await bobs.start()
            try bobs.set("fr", forKey: "language")
            #expect(await bobs.synchronize())

            let account = try await Account(container: harness.anonymousContainer(device: "laptop"))
            try await account.signIn(email: "ada@example.com", password: "correct horse")
            let engine = try await harness.engine("laptop", following: account, configuration: KeyValueStore.configuration())
            let laptop = try KeyValueStore(engine: engine, sendsAutomatically: false)
            try await laptop.start()
            try laptop.set("dark", forKey: "theme")
            #expect(await laptop.synchronize())
            let changes = laptop.changes()

            // Signing out leaves the keys (the same user usually comes back) and reports nothing.
            let events = engine.events()
            try await account.signOut()
            _ = try await firstEvent(events, where: AccountFollowingTests.isSignedOut)
            #expect(laptop.string(forKey: "theme") == "dark")

            // Another user signs in: Ada's keys leave the device, as an account change naming them.
            try await account.signIn(email: "bob@example.com", password: "correct horse")
            #expect(try #require(try await first(changes)) == KeyValueChange(reason: .accountChange, keys: ["theme"]))
            #expect(laptop.dictionaryRepresentation.isEmpty)
            // Bob's keys arrive with the first sync as Bob; Ada's never reach his account.
            try await laptop.start()
            #expect(laptop.dictionaryRepresentation == ["language": .string("fr")])
            #expect(await bobs.synchronize())
            #expect(bobs.dictionaryRepresentation == ["language": .string("fr")])
        }
    }

    @Test func switchingUsersDirectlyIsAnAccountChange() async throws {
        let mailBox = MailBox()
        try await SyncHarness.withAccounts(mailBox) { harness in
            try await harness.register("ada@example.com", mailBox: mailBox)
            try await harness.register("bob@example.com", mailBox: mailBox)
            let account = try await Account(container: harness.anonymousContainer(device: "laptop"))
            try await account.signIn(email: "ada@example.com", password: "correct horse")
            let engine = try await harness.engine("laptop", following: account, configuration: KeyValueStore.configuration())
            let laptop = try KeyValueStore(engine: engine, sendsAutomatically: false)
            try await laptop.start()
            try laptop.set(Int64(3), forKey: "launches")
            try laptop.set("unsent", forKey: "draft")  // not sent yet: goes with Ada's data, not to Bob
            #expect(await laptop.synchronize())
            try laptop.set("still unsent", forKey: "draft")
            let changes = laptop.changes()
            try await account.signIn(email: "bob@example.com", password: "correct horse")
            #expect(try #require(try await first(changes)) == KeyValueChange(reason: .accountChange, keys: ["draft", "launches"]))
            try await laptop.start()
            #expect(await laptop.synchronize())
            #expect(laptop.dictionaryRepresentation.isEmpty, "nothing of Ada's is sent as Bob's")
        }
    }
}
