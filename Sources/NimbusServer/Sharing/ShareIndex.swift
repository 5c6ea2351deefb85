import NimbusProtocol
import NimbusStore

/// Where a share lives: its owner, zone and record name.
struct ShareLocation: Sendable, Hashable {
    var owner: String
    var zone: String
    var share: String
}

/// Finds shares by short GUID and by participant, kept as records of a system database of
/// each container environment, through the same ``RecordStore`` as everything else (so it
/// works on every engine and node with no table of its own).
///
/// The index is a hint, never the authority: every entry is checked against the share
/// record it names (which holds the participants, ``ShareState``) before it grants anything.
/// It is therefore written *before* the share record on accept (a crash in between leaves
/// an entry the check ignores) and cleaned *after* a participant leaves or is removed.
struct ShareIndex: Sendable {
    let store: any RecordStore
    let clock: WallClock

    /// The owner of the system database: no user record name starts with two underscores.
    static let owner = "__nimbus_sharing"
    static let guidZone = "short-guids"
    static let writer = Caller(userRecordName: "__nimbus_sharing", deviceID: nil, isAdmin: true)

    static func database(container: String, environment: ContainerEnvironment) -> DatabaseKey {
        DatabaseKey(container: container, environment: environment, scope: .private, owner: owner)
    }

    static func participantZone(_ userRecordName: String) -> String { "participant-\(userRecordName)" }

    /// Records `location` under `shortGUID`.
    func register(shortGUID: String, _ location: ShareLocation, container: String, environment: ContainerEnvironment)
        async throws
    {
        try await put(
            location, named: shortGUID, zone: Self.guidZone,
            in: Self.database(container: container, environment: environment))
    }

    /// The share a short GUID names, if one was registered.
    func share(shortGUID: String, container: String, environment: ContainerEnvironment) async throws -> ShareLocation? {
        let database = Self.database(container: container, environment: environment)
        guard try await store.lookupZones([Self.guidZone], in: database).first ?? nil != nil else { return nil }
        guard let record = try await store.lookupRecords([shortGUID], zone: Self.guidZone, in: database).first ?? nil
        else { return nil }
        return Self.location(of: record)
    }

    /// Notes that `participant` accepted the share at `location`.
    func add(participant: String, _ location: ShareLocation, container: String, environment: ContainerEnvironment)
        async throws
    {
        try await put(
            location, named: Self.entryName(location), zone: Self.participantZone(participant),
            in: Self.database(container: container, environment: environment))
    }

    /// Forgets that `participant` takes part in the share at `location` (best effort).
    func remove(participant: String, _ location: ShareLocation, container: String, environment: ContainerEnvironment)
        async
    {
        let record = Record(recordName: Self.entryName(location), recordType: "ShareEntry")
        _ = try? await store.modifyRecords(
            [RecordOperation(type: .forceDelete, record: record)], zone: Self.participantZone(participant), atomic: false,
            policy: WritePolicy(creatorOnlyWrites: false, now: clock.nowMillis()), caller: Self.writer,
            in: Self.database(container: container, environment: environment))
    }

    /// Every share `participant` accepted (entries not yet checked against their shares).
    func shares(of participant: String, container: String, environment: ContainerEnvironment) async throws
        -> [ShareLocation]
    {
        let database = Self.database(container: container, environment: environment)
        let zone = Self.participantZone(participant)
        guard try await store.lookupZones([zone], in: database).first ?? nil != nil else { return [] }
        var token: String?
        var locations: [ShareLocation] = []
        repeat {
            let page = try await store.recordChanges(zone: zone, since: token, limit: 400, in: database)
            locations += page.records.filter { !$0.deleted }.compactMap(Self.location(of:))
            token = page.syncToken
            if !page.moreComing { break }
        } while true
        return locations
    }

    private func put(_ location: ShareLocation, named name: String, zone: String, in database: DatabaseKey) async throws {
        if try await store.lookupZones([zone], in: database).first ?? nil == nil {
            _ = try await store.modifyZones([.create(zoneName: zone)], in: database)
        }
        let record = Record(
            recordName: name, recordType: "ShareEntry",
            fields: ["owner": .string(location.owner), "zone": .string(location.zone), "share": .string(location.share)])
        let outcome = try await store.modifyRecords(
            [RecordOperation(type: .forceReplace, record: record)], zone: zone, atomic: false,
            policy: WritePolicy(creatorOnlyWrites: false, now: clock.nowMillis()), caller: Self.writer, in: database)
        if case .failed(let error)? = outcome.results.first { throw error }
    }

    private static func entryName(_ location: ShareLocation) -> String {
        JSON.array([.string(location.owner), .string(location.zone), .string(location.share)]).serialized()
    }

    private static func location(of record: StoredRecord) -> ShareLocation? {
        let fields = record.fields()
        guard let owner = fields["owner"]?.stringValue, let zone = fields["zone"]?.stringValue,
            let share = fields["share"]?.stringValue
        else { return nil }
        return ShareLocation(owner: owner, zone: zone, share: share)
    }
}
