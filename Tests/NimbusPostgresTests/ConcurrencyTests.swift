import NimbusProtocol
import NimbusStore
import PostgresNIO
import Testing

@testable import NimbusPostgres

extension PostgresTests {
    /// Several nodes writing one database at once: change tokens never skip a commit, and
    /// locked saves are serialised across nodes.
    @Suite("Concurrency across nodes")
    struct ConcurrencyTests {
        let database = DatabaseKey.privateDatabase(of: "_hammer")
        let caller = Caller(userRecordName: "_hammer")

        /// 8 writers on two nodes make many small commits to one zone while a reader follows
        /// `records/changes` with tokens, alternating nodes. Every acknowledged write is seen
        /// exactly once, in version order: no commit that became visible after a later one
        /// was skipped.
        @Test func aChangeFeedReaderNeverSkipsACommitMadeOnAnyNode() async throws {
            try await TestPostgres.withNodes(2) { nodes in
                _ = try await nodes[0].modifyZones([.create(zoneName: "Hammer")], in: database)
                let writers = 8
                let commitsPerWriter = 40
                let writersDone = Flag()
                // Every commit wakes the reader once it has caught up (no polling interval).
                let (commits, committed) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
                let reader = Task { try await follow(nodes, writersDone: writersDone, commits: commits) }
                let acknowledged = try await withThrowingTaskGroup(of: [String: Int64].self) { group in
                    for writer in 0..<writers {
                        let node = nodes[writer % nodes.count]
                        group.addTask {
                            var written: [String: Int64] = [:]
                            for commit in 0..<commitsPerWriter {
                                let operations = (0..<(1 + commit % 3)).map { index in
                                    Requests.operation(
                                        .create,
                                        Requests.record("w\(writer)-c\(commit)-r\(index)", fields: ["n": .int64(Int64(commit))]))
                                }
                                let outcome = try await node.modifyRecords(
                                    operations, zone: "Hammer", atomic: false, policy: Requests.policy(), caller: caller,
                                    in: database)
                                for case .saved(let record) in outcome.results { written[record.recordName] = record.version }
                                committed.yield()
                            }
                            return written
                        }
                    }
                    return try await group.reduce(into: [:]) { $0.merge($1) { first, _ in first } }
                }
                await writersDone.set()
                committed.finish()
                let followed = try await reader.value
                #expect(acknowledged.count == (0..<commitsPerWriter).map { 1 + $0 % 3 }.reduce(0, +) * writers)
                #expect(followed == acknowledged)
                // A reader starting after the fact sees the same.
                #expect(try await follow(nodes, writersDone: writersDone) == acknowledged)
            }
        }

        /// Follows the zone's feed with tokens (alternating nodes, pages of 7) and returns every
        /// record seen; fails the test on a duplicate or a version going backwards. Returns once
        /// a page that started after the writers finished has nothing more.
        func follow(_ nodes: [PostgresStore], writersDone: Flag, commits: AsyncStream<Void>? = nil) async throws
            -> [String: Int64]
        {
            var wakeUps = commits?.makeAsyncIterator()
            var token: String?
            var seen: [String: Int64] = [:]
            var lastVersion: Int64 = 0
            var turn = 0
            while true {
                let finalPass = await writersDone.isSet
                let page = try await nodes[turn % nodes.count].recordChanges(
                    zone: "Hammer", since: token, limit: 7, in: database)
                turn += 1
                for record in page.records {
                    #expect(seen[record.recordName] == nil, "\(record.recordName) was seen twice")
                    #expect(record.version > lastVersion, "version \(record.version) after \(lastVersion)")
                    seen[record.recordName] = record.version
                    lastVersion = record.version
                }
                token = page.syncToken
                if !page.moreComing {
                    if finalPass { return seen }
                    // Caught up: wait for the next commit (or the writers' end, which finishes the stream).
                    _ = await wakeUps?.next()
                }
            }
        }

        /// N writers on two nodes increment one counter with read-modify-write locked saves,
        /// retrying on CONFLICT: no increment is lost.
        @Test func lockedSavesAcrossNodesLoseNoUpdate() async throws {
            try await TestPostgres.withNodes(2) { nodes in
                let start = try await nodes[0].modifyRecords(
                    [Requests.operation(.create, Requests.record("counter", fields: ["n": 0]))], zone: "_defaultZone",
                    atomic: false, policy: Requests.policy(), caller: caller, in: database)
                #expect(start.commit != nil)
                let writers = 6
                let incrementsPerWriter = 15
                let conflicts = try await withThrowingTaskGroup(of: Int.self) { group in
                    for writer in 0..<writers {
                        let node = nodes[writer % nodes.count]
                        group.addTask {
                            var conflicts = 0
                            var done = 0
                            while done < incrementsPerWriter {
                                guard let current = try await node.lookupRecords(["counter"], zone: "_defaultZone", in: database)[0]
                                else { throw CloudKitError(.notFound, "the counter vanished") }
                                let value = try current.fields()["n"]?.int64Value ?? -1
                                let outcome = try await node.modifyRecords(
                                    [Requests.operation(.update, Requests.record("counter", tag: current.changeTag, fields: ["n": .int64(value + 1)]))],
                                    zone: "_defaultZone", atomic: false, policy: Requests.policy(), caller: caller, in: database)
                                switch outcome.results[0] {
                                case .saved: done += 1
                                case .failed(let error) where error.code == .conflict: conflicts += 1
                                default: throw CloudKitError(.internalError, "unexpected \(outcome.results[0])")
                                }
                            }
                            return conflicts
                        }
                    }
                    return try await group.reduce(0, +)
                }
                let final = try await nodes[1].lookupRecords(["counter"], zone: "_defaultZone", in: database)[0]
                #expect(try final?.fields()["n"]?.int64Value == Int64(writers * incrementsPerWriter))
                // The writers did race (not a proof of anything by itself, but the test is moot without it).
                #expect(conflicts > 0)
            }
        }
    }
}

/// A flag set once, read from any task.
actor Flag {
    private(set) var isSet = false
    func set() { isSet = true }
}
