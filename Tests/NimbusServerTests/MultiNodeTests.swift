import Foundation
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

@testable import NimbusPostgres

/// Several `nimbus serve` nodes on one PostgreSQL database, driven over HTTP and WebSocket as
/// clients meet them behind a load balancer.
@Suite("Several nodes on PostgreSQL", .enabled(if: Engine.available.contains(.postgres), Engine.postgresHowTo))
struct MultiNodeTests {
    @Test func aDeviceOnOneNodeIsPushedASaveMadeThroughAnother() async throws {
        try await TestCluster.with(nodes: 2) { cluster in
            let alice = try await cluster.user("alice", node: 0)
            _ = try await alice.createZone("ReadingList")
            #expect(try await alice.subscribe(zoneSubscription("reading-list", zone: "ReadingList")).status == 200)

            // The phone is connected to node 1; the laptop saves through node 2.
            let phone = try await PushTestDevice.connect(alice, deviceID: "phone")
            let laptop = cluster.client(alice, node: 1).onDevice("laptop")
            for index in 1...5 {
                let saved = try await laptop.modify("ReadingList", [op("create", "article-\(index)", "Bookmark")])
                #expect(saved.status == 200)
                let push = try await phone.next(timeout: .seconds(5))
                #expect(push["ck"]?["fet"]?["sid"] == "reading-list")
                #expect(push["ck"]?["fet"]?["zid"] == "ReadingList")
            }
            // Each save was pushed once: the push is the collection's entry, no duplicates.
            let collected = try await alice.allNotifications().compactMap { $0["notificationID"]?.string }
            #expect(collected.count == 5)
            #expect(await phone.pending == 0)

            // A save through the phone's own node reaches a device on the other node too, and
            // the originating device is still not pushed.
            let tablet = try await PushTestDevice.connect(cluster.client(alice, node: 1), deviceID: "tablet")
            _ = try await alice.onDevice("phone").modify("ReadingList", [op("create", "from-phone", "Bookmark")])
            let toTablet = try await tablet.next(timeout: .seconds(5))
            #expect(toTablet["ck"]?["fet"]?["zid"] == "ReadingList")
            #expect(await phone.pending == 0)
            await phone.disconnect()
            await tablet.disconnect()
        }
    }

    @Test func lockedSavesThroughTwoNodesLoseNoUpdate() async throws {
        try await TestCluster.with(nodes: 2) { cluster in
            let alice = try await cluster.user("alice", node: 0)
            _ = try await alice.createZone("Counters")
            let created = try await alice.modify("Counters", [op("create", "counter", "Counter", fields: ["value": 0])])
            #expect(created.status == 200)

            let writers = 8
            let incrementsPerWriter = 12
            let successes = try await withThrowingTaskGroup(of: Int.self) { group in
                for writer in 0..<writers {
                    let client = cluster.client(alice, node: writer % 2)
                    group.addTask {
                        var done = 0
                        while done < incrementsPerWriter {
                            let current = try await client.post(
                                "records/lookup", ["zoneID": ["zoneName": "Counters"], "records": [["recordName": "counter"]]]
                            ).records.first
                            let tag = try #require(current?["recordChangeTag"]?.string)
                            let value = try #require(current?["fields"]?["value"]?["value"]?.int64)
                            let saved = try await client.modify(
                                "Counters", [op("update", "counter", "Counter", fields: ["value": .int(value + 1)], tag: tag)])
                            let result = saved.records.first
                            if result?["serverErrorCode"] == nil, saved.status == 200 {
                                done += 1
                            } else {
                                // The only acceptable failure is losing the race.
                                #expect(result?["serverErrorCode"] == "CONFLICT")
                            }
                        }
                        return done
                    }
                }
                return try await group.reduce(0, +)
            }
            let final = try await alice.post("records/lookup", ["zoneID": ["zoneName": "Counters"], "records": [["recordName": "counter"]]]).records.first
            #expect(successes == writers * incrementsPerWriter)
            #expect(final?["fields"]?["value"]?["value"]?.int64 == Int64(successes))
        }
    }

    @Test func aChangeFeedReaderSeesEveryCommitExactlyOnceWhileManyNodesWrite() async throws {
        try await TestCluster.with(nodes: 2) { cluster in
            let alice = try await cluster.user("alice", node: 0)
            _ = try await alice.createZone("Hot")
            let writers = 8
            let writesPerWriter = 40
            let reader = cluster.client(alice, node: 0)

            // Writers: each commit creates one uniquely named record (so the feed cannot
            // coalesce two commits into one entry); each writer keeps what the server
            // acknowledged.
            let progress = WriterProgress()
            let writerTask = Task {
                let all = try await withThrowingTaskGroup(of: [String].self) { group in
                    for writer in 0..<writers {
                        let client = cluster.client(alice, node: writer % 2)
                        group.addTask {
                            var acknowledged: [String] = []
                            for index in 0..<writesPerWriter {
                                let name = "w\(writer)-\(index)"
                                let saved = try await client.modify(
                                    "Hot", [op("create", name, "Item", fields: ["n": .int(Int64(index))])])
                                if saved.status == 200, saved.records.first?["serverErrorCode"] == nil {
                                    acknowledged.append(name)
                                }
                            }
                            return acknowledged
                        }
                    }
                    return try await group.reduce(into: [String]()) { $0 += $1 }
                }
                await progress.finish(all)
                return all
            }

            // The reader follows the feed with small pages while the writers run, and stops
            // once it has caught up after they finished.
            var seen: [String] = []
            var token: String?
            let deadline = ContinuousClock.now + .seconds(120)
            while ContinuousClock.now < deadline {
                let page = try await reader.changes("Hot", since: token, limit: 7)
                try #require(page.status == 200, "records/changes answered \(page.status): \(page.text)")
                seen += page.records.compactMap { $0["recordName"]?.string }
                token = page["syncToken"]?.string
                if page["moreComing"]?.bool == true { continue }
                if let all = await progress.acknowledged, Set(seen).isSuperset(of: all) { break }
                await Task.yield()
            }
            let all = try await writerTask.value
            #expect(all.count == writers * writesPerWriter)
            // Exactly once: nothing skipped, nothing repeated.
            #expect(seen.count == Set(seen).count, "a commit was reported twice")
            #expect(Set(seen) == Set(all), "missed: \(Set(all).subtracting(seen).sorted().prefix(10))")
        }
    }

    /// A node answers token lookups from memory; a session signed out through another node
    /// is refused by it once the change's announcement arrives, and an API token revoked there
    /// too (its clock is real, but each step waits only for the announcement, far inside the
    /// answers' 1 s life).
    @Test(.timeLimit(.minutes(5))) func aSessionRevokedThroughOneNodeIsRefusedByTheOther() async throws {
        try await TestCluster.with(nodes: 2) { cluster in
            let alice = try await cluster.user("alice", node: 0)
            let bob = try await cluster.user("bob", node: 0)
            let watched = try #require(cluster.nodes[0].store as? PostgresStore)
            var events = watched.accountWatchEvents().makeAsyncIterator()
            #expect(try await alice.get("users/current").status == 200)
            #expect(await events.next() == .listening)
            #expect(try await alice.get("users/current").status == 200)
            #expect(try await bob.get("users/current").status == 200)
            #expect(watched.tokenLookups.count == 2, "both lookups kept")

            let onOtherNode = cluster.client(alice, node: 1)
            let listed = try await onOtherNode.post("sessions/list", [:])
            let session = try #require(listed["sessions"]?.array?.first?["sessionID"]?.string)
            #expect(try await onOtherNode.post("sessions/revoke", ["sessionIDs": [.string(session)]]).status == 200)
            #expect(await events.next() == .heard("session \(session)"))
            #expect(try await alice.get("users/current").serverErrorCode == "AUTHENTICATION_FAILED")
            #expect(try await bob.get("users/current").status == 200)

            #expect(try await cluster.nodes[1].store.revokeToken(cluster.apiToken))
            #expect(await events.next() == .heard("*"))
            #expect(try await bob.get("users/current").serverErrorCode == "AUTHENTICATION_FAILED")
        }
    }
}

/// What the writers of the change-feed test had acknowledged, once they are done.
private actor WriterProgress {
    private(set) var acknowledged: [String]?
    func finish(_ names: [String]) { acknowledged = names }
}
