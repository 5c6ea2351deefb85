import NimbusProtocol
import NimbusStore
import NimbusTestSupport
import Testing

/// Subscriptions through the storage protocol: saved, replaced, listed, looked up, deleted.
@Suite("Store: subscriptions")
struct SubscriptionStoreTests {
    typealias F = Fixture
    static let publicDatabase = DatabaseKey(
        container: Fixture.container, environment: .development, scope: .public, owner: DatabaseKey.publicOwner)

    static func zone(_ id: String, _ zone: String, type: String? = nil) -> SubscriptionDefinition {
        SubscriptionDefinition(subscriptionID: id, kind: .zone(zoneName: zone, recordType: type))
    }

    @Test(arguments: Engine.available)
    func subscriptionsAreStoredListedAndLookedUp(engine: Engine) async throws {
        try await engine.withStore { store in
            _ = try await store.modifyZones([.create(zoneName: "Z")], in: F.alice)
            let everything = SubscriptionDefinition(subscriptionID: "b-all", kind: .database)
            let items = Self.zone("a-items", "Z", type: "Item")
            let results = try await store.modifySubscriptions(
                [.save(everything), .save(items)], owner: "_alice", in: F.alice)
            #expect(results == [.saved(everything), .saved(items)])
            #expect(try await store.listSubscriptions(owner: "_alice", in: F.alice) == [items, everything], "by ID")
            #expect(
                try await store.lookupSubscriptions(["b-all", "missing", "a-items"], owner: "_alice", in: F.alice)
                    == [everything, nil, items])

            // Saving an ID again replaces it; deleting removes it.
            let replaced = Self.zone("a-items", "Z")
            let second = try await store.modifySubscriptions(
                [.save(replaced), .delete(subscriptionID: "b-all")], owner: "_alice", in: F.alice)
            #expect(second == [.saved(replaced), .deleted(subscriptionID: "b-all")])
            #expect(try await store.listSubscriptions(owner: "_alice", in: F.alice) == [replaced])
            #expect(try await store.listSubscriptions(owner: "_bob", in: F.bob).isEmpty)
        }
    }

    @Test(arguments: Engine.available)
    func aSubscriptionThatCannotBeSavedFailsAlone(engine: Engine) async throws {
        try await engine.withStore { store in
            let results = try await store.modifySubscriptions(
                [.save(Self.zone("z", "nope")), .save(Self.zone("d", "_defaultZone")), .save(Self.zone("d", "_defaultZone"))],
                owner: "_alice", in: F.alice)
            guard case .failed(_, let missingZone) = results[0], case .failed(_, let duplicate) = results[2] else {
                Issue.record("a missing zone and a repeated ID must fail: \(results)")
                return
            }
            #expect(missingZone.code == .zoneNotFound)
            #expect(results[1] == .saved(Self.zone("d", "_defaultZone")), "the default zone always exists")
            #expect(duplicate.code == .badRequest)
            #expect(try await store.listSubscriptions(owner: "_alice", in: F.alice).map(\.subscriptionID) == ["d"])
        }
    }

    @Test(arguments: Engine.available)
    func inThePublicDatabaseEachUserHasTheirOwnSubscriptions(engine: Engine) async throws {
        try await engine.withStore { store in
            let alices = Self.zone("same-id", "_defaultZone", type: "Item")
            let bobs = Self.zone("same-id", "_defaultZone", type: "Note")
            _ = try await store.modifySubscriptions([.save(alices)], owner: "_alice", in: Self.publicDatabase)
            _ = try await store.modifySubscriptions([.save(bobs)], owner: "_bob", in: Self.publicDatabase)
            #expect(try await store.listSubscriptions(owner: "_alice", in: Self.publicDatabase) == [alices])
            #expect(try await store.listSubscriptions(owner: "_bob", in: Self.publicDatabase) == [bobs])
            _ = try await store.modifySubscriptions([.delete(subscriptionID: "same-id")], owner: "_bob", in: Self.publicDatabase)
            #expect(try await store.listSubscriptions(owner: "_alice", in: Self.publicDatabase) == [alices])
            #expect(try await store.listSubscriptions(owner: "_bob", in: Self.publicDatabase).isEmpty)
        }
    }

    @Test(arguments: Engine.available)
    func aWriteNotifiesTheSubscribedUserButNotTheDeviceThatMadeIt(engine: Engine) async throws {
        try await RecordStoreTests.withZone(engine) { store in
            _ = try await store.modifySubscriptions([.save(Self.zone("z", "Z"))], owner: "_alice", in: F.alice)
            let outcome = try await store.modify([F.operation(.create, "a")])
            let notification = try #require(outcome.commit?.notifications.first)
            #expect(outcome.commit?.notifications.count == 1)
            #expect(notification.subscriptionID == "z")
            #expect(notification.recipient == F.aliceRecipient)
            #expect(notification.originated(byDevice: "phone"))
            #expect(!notification.originated(byDevice: "laptop"))
            let page = try await store.notificationChanges(for: F.aliceRecipient, since: nil, limit: 10)
            #expect(page.notifications.map(\.notificationID) == [notification.notificationID])
        }
    }
}
