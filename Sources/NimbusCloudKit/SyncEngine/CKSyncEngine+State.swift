import Foundation
import Nimbus

extension CKSyncEngine {
    /// What the engine keeps between launches: the changes waiting to be sent, the change
    /// tokens, the zones with unfetched changes and the signed-in user. Persist
    /// ``Serialization`` from each ``Event/stateUpdate(_:)`` and hand it back at launch.
    ///
    /// Every stored property is a constant (`data` is a `Locked`), so the class is `Sendable`.
    public final class State: Sendable {
        /// The state as opaque, `Codable` data.
        public struct Serialization: Codable, Hashable, Sendable {
            let data: Data

            init(_ data: Data) {
                self.data = data
            }

            public init(from decoder: any Decoder) throws {
                data = try decoder.singleValueContainer().decode(Data.self)
            }

            public func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                try container.encode(data)
            }
        }

        /// The persisted members.
        struct Stored: Codable, Sendable {
            var version = 1
            var pendingRecordChanges: [StoredRecordChange] = []
            var pendingDatabaseChanges: [StoredDatabaseChange] = []
            var databaseToken: String?
            var zoneTokens: [String: String] = [:]
            var zonesWithUnfetchedChanges: [StoredZoneID] = []
            var userRecordName: String?
            var hasPendingUntrackedChanges = false
            var subscriptionSaved = false
        }

        let data: Locked<Stored>
        /// Called after the app adds or removes pending changes (the engine schedules work).
        let onChange: Locked<(@Sendable () -> Void)?> = Locked(nil)

        init(_ serialization: Serialization?) {
            let stored = serialization.flatMap { try? JSONDecoder().decode(Stored.self, from: $0.data) }
            data = Locked(stored ?? Stored())
        }

        var serialization: Serialization {
            Serialization((try? JSONEncoder().encode(data.current)) ?? Data())
        }

        /// The record changes waiting to be sent, in the order they were added.
        public var pendingRecordZoneChanges: [PendingRecordZoneChange] {
            data.current.pendingRecordChanges.map(\.change)
        }

        /// The zone changes waiting to be sent, in the order they were added.
        public var pendingDatabaseChanges: [PendingDatabaseChange] {
            data.current.pendingDatabaseChanges.map(\.change)
        }

        /// Set it when the app has changes it has not added as pending changes yet; the next
        /// send asks the delegate for a batch even when nothing is pending.
        public var hasPendingUntrackedChanges: Bool {
            get { data.current.hasPendingUntrackedChanges }
            set {
                data.withLock { $0.hasPendingUntrackedChanges = newValue }
                onChange.current?()
            }
        }

        /// Zones the server reported changed whose records were not fetched yet.
        public var zoneIDsWithUnfetchedServerChanges: [CKRecordZone.ID] {
            data.current.zonesWithUnfetchedChanges.map(\.id)
        }

        public func add(pendingRecordZoneChanges changes: [PendingRecordZoneChange]) {
            data.withLock { stored in
                for change in changes.map(StoredRecordChange.init) {
                    // A save replaces a delete of the same record and the other way round.
                    stored.pendingRecordChanges.removeAll {
                        $0.recordName == change.recordName && $0.zone == change.zone
                    }
                    stored.pendingRecordChanges.append(change)
                }
            }
            onChange.current?()
        }

        public func remove(pendingRecordZoneChanges changes: [PendingRecordZoneChange]) {
            let removed = Set(changes.map(StoredRecordChange.init))
            data.withLock { $0.pendingRecordChanges.removeAll { removed.contains($0) } }
            onChange.current?()
        }

        public func add(pendingDatabaseChanges changes: [PendingDatabaseChange]) {
            data.withLock { stored in
                for change in changes.map(StoredDatabaseChange.init) {
                    stored.pendingDatabaseChanges.removeAll { $0.zone == change.zone }
                    stored.pendingDatabaseChanges.append(change)
                }
            }
            onChange.current?()
        }

        public func remove(pendingDatabaseChanges changes: [PendingDatabaseChange]) {
            let removed = Set(changes.map(StoredDatabaseChange.init))
            data.withLock { $0.pendingDatabaseChanges.removeAll { removed.contains($0) } }
            onChange.current?()
        }
    }
}

extension CKRecordZone.ID {
    /// The key of a zone in persisted maps.
    var storageKey: String { "\(ownerName)/\(zoneName)" }
}
