import Foundation
import NimbusCloudKit

/// A port of the shape of Apple's CKSyncEngine sample (written here, not copied): one
/// device's contacts, kept by the app, synced by a `CKSyncEngine` through NimbusCloudKit only.
/// Conflicts go to the newer `modified` date; `zoneNotFound` recreates the zone and
/// `unknownItem` saves the contact as new, as the sample does.
actor ContactsDevice: CKSyncEngineDelegate {
    struct Contact: Sendable, Equatable {
        var name: String
        var modified: Date
        /// The record's archived system fields, once the server has it.
        var systemFields: Data?
    }

    static let zoneID = CKRecordZone.ID(zoneName: "Contacts")

    private(set) var contacts: [String: Contact] = [:]
    private(set) var savedState: CKSyncEngine.State.Serialization?
    private(set) var events: [String] = []
    /// Each zone deletion fetched, as "zone reason".
    private(set) var zoneDeletions: [String] = []
    /// Sends its batches atomically by zone (each zone's changes succeed or fail together).
    private(set) var atomicByZone = false
    /// Contacts edited without a pending change (``editUntracked(_:name:at:)``), sent when the
    /// engine asks with ``CKSyncEngine/State/hasPendingUntrackedChanges`` set.
    private(set) var untracked: [String] = []
    /// How many times the engine asked for a batch.
    private(set) var batchRequests = 0
    /// The zones this device's fetches leave out (through `nextFetchChangesOptions`), and the
    /// reason of each fetch it was asked about.
    private var excludedFromFetches: [CKRecordZone.ID] = []
    private(set) var fetchReasons: [CKSyncEngine.SyncReason] = []
    /// An event the device stops in (``hold(at:)``) until ``release()``.
    private var holdAt: String?
    private var holding: CheckedContinuation<Void, Never>?
    private var engine: CKSyncEngine?
    private var waiters: [Int: (condition: @Sendable (isolated ContactsDevice) -> Bool, done: CheckedContinuation<Void, Never>)] = [:]
    private var nextWaiter = 0

    /// Starts the device's engine over `database`, from a persisted state when given.
    func start(database: CKDatabase, state: CKSyncEngine.State.Serialization? = nil, automatically: Bool = false) {
        var configuration = CKSyncEngine.Configuration(database: database, stateSerialization: state, delegate: self)
        configuration.automaticallySync = automatically
        engine = CKSyncEngine(configuration)
    }

    var syncEngine: CKSyncEngine { engine! }

    /// Creates or edits a contact and queues it for sending.
    func edit(_ id: String, name: String, at date: Date) {
        var contact = contacts[id] ?? Contact(name: name, modified: date)
        contact.name = name
        contact.modified = date
        contacts[id] = contact
        engine!.state.add(pendingRecordZoneChanges: [.saveRecord(Self.recordID(id))])
    }

    /// Queues the zone for creation (the first launch of the sample does this).
    func createZone() {
        engine!.state.add(pendingDatabaseChanges: [.saveZone(CKRecordZone(zoneID: Self.zoneID))])
    }

    func clearEvents() { events = [] }

    func sendAtomicallyByZone(_ atomic: Bool) { atomicByZone = atomic }

    /// Creates or edits a contact without telling the engine (the app tracks it itself).
    func editUntracked(_ id: String, name: String, at date: Date) {
        contacts[id] = Contact(name: name, modified: date, systemFields: contacts[id]?.systemFields)
        untracked.append(id)
    }

    /// Leaves `zones` out of every fetch, through `nextFetchChangesOptions`.
    func excludeFromFetches(_ zones: [CKRecordZone.ID]) { excludedFromFetches = zones }

    /// Stops the engine in the first event whose description starts with `prefix`, until
    /// ``release()`` (``until(_:)`` sees `holding <event>` in ``events`` meanwhile).
    func hold(at prefix: String) { holdAt = prefix }

    func release() {
        holdAt = nil
        holding?.resume()
        holding = nil
    }

    /// Returns once `condition` holds: checked now and after each event the engine reports
    /// (no polling). Cancelling the waiting task ends the wait.
    func until(_ condition: @escaping @Sendable (isolated ContactsDevice) -> Bool) async {
        guard !condition(self) else { return }
        let id = nextWaiter
        nextWaiter += 1
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if Task.isCancelled { continuation.resume() } else { waiters[id] = (condition, continuation) }
            }
        } onCancel: {
            Task { await self.endWait(id) }
        }
    }

    private func endWait(_ id: Int) {
        waiters.removeValue(forKey: id)?.done.resume()
    }

    private func wakeWaiters() {
        for (id, waiter) in waiters where waiter.condition(self) {
            waiters[id] = nil
            waiter.done.resume()
        }
    }

    /// A contact's record ID: `name` in the Contacts zone, `Zone/name` in another zone.
    static func recordID(_ id: String) -> CKRecord.ID {
        let parts = id.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { return CKRecord.ID(recordName: id, zoneID: zoneID) }
        return CKRecord.ID(recordName: parts[1], zoneID: CKRecordZone.ID(zoneName: parts[0]))
    }

    /// The contact a record ID names (the inverse of ``recordID(_:)``).
    static func key(_ recordID: CKRecord.ID) -> String {
        recordID.zoneID == zoneID ? recordID.recordName : "\(recordID.zoneID.zoneName)/\(recordID.recordName)"
    }

    // MARK: - CKSyncEngineDelegate

    func handleEvent(_ event: CKSyncEngine.Event, syncEngine: CKSyncEngine) async {
        defer { wakeWaiters() }
        events.append(event.description)
        if let prefix = holdAt, event.description.hasPrefix(prefix) {
            events.append("holding \(event.description)")
            wakeWaiters()
            await withCheckedContinuation { holding = $0 }
        }
        switch event {
        case .stateUpdate(let update):
            savedState = update.stateSerialization
        case .accountChange(let change):
            if case .signIn = change.changeType { break }
            contacts = [:]
        case .fetchedDatabaseChanges(let changes):
            zoneDeletions += changes.deletions.map { "\($0.zoneID.zoneName) \($0.reason)" }
            for deletion in changes.deletions where deletion.zoneID == Self.zoneID { contacts = [:] }
        case .fetchedRecordZoneChanges(let changes):
            for modification in changes.modifications { merge(modification.record) }
            for deletion in changes.deletions { contacts[Self.key(deletion.recordID)] = nil }
        case .sentRecordZoneChanges(let sent):
            for record in sent.savedRecords { contacts[Self.key(record.recordID)]?.systemFields = Self.archive(record) }
            for failure in sent.failedRecordSaves {
                events.append("failed \(Self.key(failure.record.recordID)) \(failure.error.code)")
                recover(Self.key(failure.record.recordID), from: failure.error, syncEngine)
            }
        default:
            break
        }
    }

    func nextRecordZoneChangeBatch(
        _ context: CKSyncEngine.SendChangesContext, syncEngine: CKSyncEngine
    ) async -> CKSyncEngine.RecordZoneChangeBatch? {
        batchRequests += 1
        let pending = syncEngine.state.pendingRecordZoneChanges.filter { context.options.scope.contains($0) }
        let snapshot = contacts
        guard atomicByZone || !untracked.isEmpty else {
            return await CKSyncEngine.RecordZoneChangeBatch(pendingChanges: pending) { recordID in
                snapshot[Self.key(recordID)].map { Self.record(Self.key(recordID), $0) }
            }
        }
        // The app's own list: the pending changes and the untracked edits, in one batch.
        var saves = untracked.compactMap { id in snapshot[id].map { Self.record(id, $0) } }
        var deletes: [CKRecord.ID] = []
        untracked = []
        for change in pending {
            switch change {
            case .saveRecord(let id): if let contact = snapshot[Self.key(id)] { saves.append(Self.record(Self.key(id), contact)) }
            case .deleteRecord(let id): deletes.append(id)
            }
        }
        guard !saves.isEmpty || !deletes.isEmpty else { return nil }
        return CKSyncEngine.RecordZoneChangeBatch(recordsToSave: saves, recordIDsToDelete: deletes, atomicByZone: atomicByZone)
    }

    func nextFetchChangesOptions(
        _ context: CKSyncEngine.FetchChangesContext, syncEngine: CKSyncEngine
    ) async -> CKSyncEngine.FetchChangesOptions {
        fetchReasons.append(context.reason)
        guard !excludedFromFetches.isEmpty else { return context.options }
        return CKSyncEngine.FetchChangesOptions(scope: .allExcluding(excludedFromFetches))
    }

    // MARK: - The sample's rules

    /// A fetched contact replaces the local one unless the local edit is newer and unsent.
    private func merge(_ record: CKRecord) {
        let id = Self.key(record.recordID)
        let server = Contact(
            name: record["name"] as? String ?? "", modified: record["modified"] as? Date ?? .distantPast,
            systemFields: Self.archive(record))
        if let local = contacts[id], local.modified > server.modified,
            engine!.state.pendingRecordZoneChanges.contains(.saveRecord(record.recordID))
        {
            contacts[id]?.systemFields = server.systemFields
        } else {
            contacts[id] = server
        }
    }

    private func recover(_ id: String, from error: CKError, _ engine: CKSyncEngine) {
        switch error.code {
        case .serverRecordChanged:
            guard let server = error.serverRecord else { return }
            let serverDate = server["modified"] as? Date ?? .distantPast
            if let local = contacts[id], local.modified > serverDate {
                contacts[id]?.systemFields = Self.archive(server)
                engine.state.add(pendingRecordZoneChanges: [.saveRecord(server.recordID)])
            } else {
                contacts[id] = Contact(
                    name: server["name"] as? String ?? "", modified: serverDate, systemFields: Self.archive(server))
            }
        case .zoneNotFound:
            engine.state.add(pendingDatabaseChanges: [.saveZone(CKRecordZone(zoneID: Self.recordID(id).zoneID))])
            contacts[id]?.systemFields = nil
            engine.state.add(pendingRecordZoneChanges: [.saveRecord(Self.recordID(id))])
        case .unknownItem:
            contacts[id]?.systemFields = nil
            engine.state.add(pendingRecordZoneChanges: [.saveRecord(Self.recordID(id))])
        default:
            break
        }
    }

    static func record(_ id: String, _ contact: Contact) -> CKRecord {
        let record: CKRecord
        if let data = contact.systemFields, let unarchiver = try? NSKeyedUnarchiver(forReadingFrom: data),
            let restored = CKRecord(coder: unarchiver)
        {
            record = restored
        } else {
            record = CKRecord(recordType: "Contact", recordID: recordID(id))
        }
        record["name"] = contact.name
        record["modified"] = contact.modified
        return record
    }

    static func archive(_ record: CKRecord) -> Data {
        let archiver = NSKeyedArchiver(requiringSecureCoding: true)
        record.encodeSystemFields(with: archiver)
        archiver.finishEncoding()
        return archiver.encodedData
    }
}
