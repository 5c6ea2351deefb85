import NimbusProtocol
import NimbusStore

/// What one user may do in one owner's zone through the shares they accepted there.
struct SharedZoneAccess: Sendable {
    typealias Permission = ShareState.Permission

    var owner: String
    var zone: String
    /// The permission of a zone-wide share, if the user accepted one.
    var zoneWide: Permission?
    /// Roots of the shared hierarchies and the permission each gives.
    var roots: [String: Permission] = [:]
    /// The share records the user takes part in (readable, never writable by them).
    var shares: [String: ShareState] = [:]

    var isEmpty: Bool { shares.isEmpty }

    /// The permission the user has on `record`, walking its `parent` chain up to a shared
    /// root (at most ``maxDepth`` steps); `nil` when the record is not shared with them.
    /// `lookup` reads a live record of the zone by name.
    func permission(
        of record: StoredRecord, lookup: (String) async throws -> StoredRecord?
    ) async throws -> Permission? {
        if shares[record.recordName] != nil { return .readOnly }
        if let zoneWide { return zoneWide }
        var current = record
        for _ in 0..<Self.maxDepth {
            if let permission = roots[current.recordName] { return permission }
            // A tombstone keeps its parent (``StoredRecord/tombstoneFieldsJSON(of:)``); ancestors are live records.
            guard let parent = current.fields()[SystemFields.parent]?.referenceValue?.recordName,
                let next = try await lookup(parent)
            else { return nil }
            current = next
        }
        return nil
    }

    /// The deepest `parent` chain followed when deciding whether a record is shared.
    static let maxDepth = 64
}

extension CloudKitAPI {
    var shareIndex: ShareIndex { ShareIndex(store: store, clock: clock) }

    /// What `user` may do in `owner`'s `zone`: the accepted shares of the index, each checked
    /// against its share record.
    func sharedAccess(
        of user: String, owner: String, zone: String, container: String, environment: ContainerEnvironment,
        locations: [ShareLocation]? = nil
    ) async throws -> SharedZoneAccess {
        var access = SharedZoneAccess(owner: owner, zone: zone)
        var all = locations ?? []
        if locations == nil { all = try await shareIndex.shares(of: user, container: container, environment: environment) }
        let names = Set(all.filter { $0.owner == owner && $0.zone == zone }.map(\.share))
        guard !names.isEmpty else { return access }
        let database = DatabaseKey(container: container, environment: environment, scope: .private, owner: owner)
        let found: [String: StoredRecord]
        do {
            found = try await records(named: names, zone: zone, in: database)
        } catch let error as CloudKitError where error.code == .zoneNotFound {
            return access
        }
        for name in names {
            guard let record = found[name], record.recordType == SystemFields.shareType else { continue }
            let fields = record.fields()
            guard let state = fields[SystemFields.shareState]?.stringValue.flatMap(ShareState.init(storedText:)),
                state.owner == owner, let me = state.acceptedParticipant(user)
            else { continue }
            access.shares[name] = state
            if let root = fields[SystemFields.root]?.referenceValue?.recordName {
                access.roots[root] = max(access.roots[root] ?? .none, me.permission)
            } else {
                access.zoneWide = max(access.zoneWide ?? .none, me.permission)
            }
        }
        return access
    }

    /// Every zone shared with `user` that they may read, by owner and zone.
    /// - Parameter locations: the user's index entries, when the caller has read them already.
    func sharedZones(
        of user: String, container: String, environment: ContainerEnvironment, locations: [ShareLocation]? = nil
    ) async throws -> [SharedZoneAccess] {
        var locations = locations ?? []
        if locations.isEmpty { locations = try await shareIndex.shares(of: user, container: container, environment: environment) }
        var seen: Set<[String]> = []
        var zones: [SharedZoneAccess] = []
        for location in locations where seen.insert([location.owner, location.zone]).inserted {
            let access = try await sharedAccess(
                of: user, owner: location.owner, zone: location.zone, container: container, environment: environment,
                locations: locations)
            if !access.isEmpty { zones.append(access) }
        }
        return zones.sorted { ($0.owner, $0.zone) < ($1.owner, $1.zone) }
    }
}

extension ShareState.Permission: Comparable {
    private var rank: Int {
        switch self {
        case .none: 0
        case .readOnly: 1
        case .readWrite: 2
        }
    }

    static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }
}
