import Foundation
import NimbusProtocol
import NimbusStore
import PostgresNIO
import Testing

@testable import NimbusPostgres

extension PostgresTests {
    /// Cross-node push: LISTEN/NOTIFY between two store instances on one schema.
    @Suite("Remote notifications")
    struct RemoteNotificationTests {
        let database = DatabaseKey.privateDatabase(of: "_owner")
        let caller = Caller(userRecordName: "_owner", deviceID: "phone")

        func subscribe(_ store: PostgresStore) async throws {
            _ = try await store.modifyZones([.create(zoneName: "Inbox")], in: database)
            let query = SubscriptionDefinition(
                subscriptionID: "every-item",
                kind: .query(RecordQuery(recordType: "Item"), scope: .zone("Inbox"), firesOn: [.create, .update, .delete], firesOnce: false),
                notificationInfo: NotificationInfo(shouldBadge: true))
            let zone = SubscriptionDefinition(subscriptionID: "inbox", kind: .zone(zoneName: "Inbox", recordType: nil))
            let results = try await store.modifySubscriptions([.save(query), .save(zone)], owner: "_owner", in: database)
            #expect(results == [.saved(query), .saved(zone)])
        }

        func create(_ names: [String], on store: PostgresStore) async throws -> [StoredNotification] {
            let outcome = try await store.modifyRecords(
                names.map { Requests.operation(.create, Requests.record($0, fields: ["title": .string("a title that takes some room")])) },
                zone: "Inbox", atomic: false, policy: Requests.policy(), caller: caller, in: database)
            return outcome.commit?.notifications ?? []
        }

        @Test func anotherNodeHearsACommitAndTheWritingNodeDoesNot() async throws {
            try await TestPostgres.withNodes(2) { nodes in
                try await subscribe(nodes[0])
                var fromA = await nodes[0].remoteNotificationsWhenListening().makeAsyncIterator()
                var fromB = await nodes[1].remoteNotificationsWhenListening().makeAsyncIterator()

                let committedOnA = try await create(["a1"], on: nodes[0])
                #expect(committedOnA.count == 2)
                #expect(await fromB.next() == committedOnA)

                // A's first remote batch is B's commit: it never heard its own.
                let committedOnB = try await create(["b1", "b2"], on: nodes[1])
                #expect(committedOnB.count == 3)
                #expect(await fromA.next() == committedOnB)
            }
        }

        /// A commit whose notifications pass the NOTIFY payload limit is announced by
        /// reference; the listener reads the notifications back exactly as created, even
        /// after one was marked read.
        @Test func aLargeCommitIsAnnouncedByReference() async throws {
            try await TestPostgres.withNodes(2) { nodes in
                try await subscribe(nodes[0])
                var fromB = await nodes[1].remoteNotificationsWhenListening().makeAsyncIterator()
                let committed = try await create((0..<60).map { "r\($0)" }, on: nodes[0])
                #expect(committed.count == 61)
                let messages = try RemoteNotificationMessage.encode(committed, node: nodes[0].nodeID)
                #expect(messages.allSatisfy { $0.utf8.count <= RemoteNotificationMessage.maxPayloadBytes })
                #expect(RemoteNotificationMessage.decode(messages[0])?.references != nil)
                #expect(await fromB.next() == committed)
            }
        }

        @Test func referencesSplitIntoPartsAreReassembled() async throws {
            let recipients = (0..<400).map { NotificationRecipient(container: "iCloud.test", environment: .production, userRecordName: "_user\($0)") }
            let notifications = recipients.enumerated().map { index, recipient in
                StoredNotification(
                    recipient: recipient, sequence: Int64(index + 1), createdSequence: Int64(index + 1),
                    notificationID: "n\(index)", subscriptionID: "s", kind: .database, scope: .public, zoneName: nil,
                    zoneOwner: nil, recordName: nil, reason: nil, originUser: nil, originDevice: nil, payload: "{}",
                    isRead: false, badges: false, createdAt: 0)
            }
            let messages = try RemoteNotificationMessage.encode(notifications, node: UUID())
            #expect(messages.count > 1)
            var assembler = CommitAssembler()
            let decoded = messages.compactMap(RemoteNotificationMessage.decode)
            for message in decoded.dropLast() { #expect(assembler.add(message) == nil) }
            let completed = assembler.add(decoded[decoded.count - 1])
            let parts = try #require(completed)
            let references = parts.flatMap { $0.references ?? [] }
            #expect(references.map(\.recipient) == recipients.map(\.userRecordName))
        }

        @Test func streamsFinishOnShutdown() async throws {
            let store = try await TestPostgres.open(schema: TestPostgres.freshSchema())
            let stream = await store.remoteNotificationsWhenListening()
            try await store.rows("DROP SCHEMA \(unescaped: "\"\(store.schema)\"") CASCADE")
            try await store.shutdown()
            var iterator = stream.makeAsyncIterator()
            #expect(await iterator.next() == nil)
            // After shutdown: a finished stream, and every other call throws.
            var late = store.remoteNotifications().makeAsyncIterator()
            #expect(await late.next() == nil)
            await #expect(throws: PostgresStoreError.self) { try await store.listContainers() }
        }
    }
}
