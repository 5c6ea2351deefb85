import Foundation
import GRDB
import NIOConcurrencyHelpers

/// A record of the local store, by zone and name.
public struct LocalRecordID: Sendable, Hashable, Codable, CustomStringConvertible {
    public var zoneName: String
    public var recordName: String

    public init(zoneName: String, recordName: String) {
        self.zoneName = zoneName
        self.recordName = recordName
    }

    public var description: String { "\(zoneName)/\(recordName)" }
}

extension LocalStore {
    /// The records whose local view changed, one element per committed transaction: a page a
    /// fetch applied, a batch a send settled, an edit through ``write(_:)``, a quarantine.
    ///
    /// A record is named when its fields, its pending state or its server copy changed; read
    /// it again with ``record(zone:name:)`` or ``read(_:)-(Database)->T`` (it may be gone).
    /// Each call returns a new subscriber, which receives every transaction committed after
    /// this call returns. The app's own tables are not reported: observe them with GRDB.
    ///
    /// ```swift
    /// for await changed in store.changes() where changed.contains(where: { $0.zoneName == "ReadingList" }) {
    ///     bookmarks = try store.records(inZone: "ReadingList")
    /// }
    /// ```
    public func changes() -> AsyncStream<Set<LocalRecordID>> {
        let (stream, continuation) = AsyncStream<Set<LocalRecordID>>.makeStream(bufferingPolicy: .unbounded)
        let id = UUID()
        subscribers.withLockedValue { $0[id] = continuation }
        continuation.onTermination = { [subscribers] _ in
            _ = subscribers.withLockedValue { $0.removeValue(forKey: id) }
        }
        return stream
    }

    /// Reports what `changes` holds to the subscribers once the transaction of `db` commits
    /// (GRDB runs commit callbacks on the writer, in commit order; a rollback reports nothing).
    func publishOnCommit(_ changes: ChangeTracker, _ db: GRDB.Database) {
        guard !changes.records.isEmpty || !changes.givenUp.isEmpty else { return }
        let (records, givenUp) = (changes.records, changes.givenUp)
        db.afterNextTransaction(onCommit: { [subscribers, giveUpObservers] _ in
            let continuations = records.isEmpty ? [] : subscribers.withLockedValue { Array($0.values) }
            if !continuations.isEmpty {
                // Made only when somebody listens: a first sync's pages name a million records.
                let changed = Set(records)
                for continuation in continuations { continuation.yield(changed) }
            }
            if !givenUp.isEmpty {
                for observer in giveUpObservers.withLockedValue({ Array($0.values) }) { observer(givenUp) }
            }
        })
    }
}

/// The records one write transaction changed. Lives inside that transaction only (one
/// thread: the writer's), so it needs no lock and is not `Sendable`.
final class ChangeTracker {
    /// In the order they changed, a record named once per change (``LocalStore/changes()``
    /// sends them as a set).
    private(set) var records: [LocalRecordID] = []
    /// Changes this transaction gave up on (reported as ``SyncEvent/gaveUp(_:)`` on commit).
    private(set) var givenUp: [GivenUpChange] = []

    func insert(zone: String, name: String) {
        records.append(LocalRecordID(zoneName: zone, recordName: name))
    }

    /// Makes room for `count` more records (a fetched page's), so the list grows once.
    func reserve(_ count: Int) {
        records.reserveCapacity(records.count + count)
    }

    func gaveUp(_ change: GivenUpChange) {
        givenUp.append(change)
    }
}
