import Foundation
import NimbusProtocol
import NimbusStore

/// The `shared` database: the zones other users shared with the caller, named with their
/// owner, each operation reaching the owner's database through ``SharedZoneAccess``.
extension CloudKitAPI {
    func handleShared(_ call: APICall) async throws -> JSON {
        guard let user = call.identity.user else {
            throw CloudKitError(.authenticationRequired, "the shared database needs a signed-in user: pass ckWebAuthToken")
        }
        switch call.operation {
        case .zonesList: return try await sharedZoneList(call, user: user.recordName)
        case .zonesLookup: return try await sharedZoneLookup(call, user: user.recordName)
        case .changesDatabase, .zonesChanges: return try await sharedDatabaseChanges(call, user: user.recordName)
        case .recordsChanges:
            guard try call.body.optional("zoneID") != nil else { throw CloudKitError.badRequest("'zoneID' is required") }
            return try await sharedChangesPage(call, reader: call.body, user: user.recordName)
        case .changesZone:
            let readers = try call.body.required("zones").array()
            guard readers.count <= ProtocolLimits.maxOperations else {
                throw CloudKitError(.limitExceeded, "\(readers.count) zones in one request; the limit is \(ProtocolLimits.maxOperations)")
            }
            var zones: [JSON] = []
            for reader in readers {
                do {
                    zones.append(try await sharedChangesPage(call, reader: reader, user: user.recordName))
                } catch let error as CloudKitError {
                    zones.append(call.errorJSON(error))
                }
            }
            return .object(["zones": .array(zones)])
        case .recordsLookup: return try await sharedLookup(call, user: user.recordName)
        case .recordsQuery:
            let (acting, _, access) = try await sharedZone(call, reader: call.body, user: user.recordName)
            return try await queryRecords(acting, shared: access)
        case .recordsModify: return try await sharedModify(call, user: user)
        case .zonesModify:
            throw CloudKitError(.accessDenied, "zones of the shared database belong to their owners; only an owner creates or deletes them")
        case .assetsUpload, .assetsRereference:
            let (acting, _, access) = try await sharedZone(call, reader: call.body, user: user.recordName)
            guard call.operation == .assetsRereference || access.zoneWide == .readWrite || access.roots.values.contains(.readWrite)
            else { throw CloudKitError(.accessDenied, "you may read, not write, the records shared with you") }
            return try await handle(acting)
        default:
            return try await handle(call, sharedResolved: true)
        }
    }

    /// The zone a shared-database request names (with its owner), and what the caller may do there.
    func sharedZone(_ call: APICall, reader: WireReader, user: String) async throws -> (APICall, ZoneID, SharedZoneAccess) {
        guard let zoneReader = try reader.optional("zoneID") else {
            throw CloudKitError.badRequest("'zoneID' is required in the shared database")
        }
        let zoneID = try ZoneID(wire: zoneReader)
        try NameRules.checkName(zoneID.zoneName, at: "\(zoneReader.path).zoneName")
        guard let owner = zoneID.ownerRecordName, !owner.isEmpty else {
            throw CloudKitError.badRequest(
                "'\(zoneReader.path).ownerRecordName' is required in the shared database: name the zone's owner")
        }
        let access = try await sharedAccess(
            of: user, owner: owner, zone: zoneID.zoneName, container: call.identity.container,
            environment: call.identity.environment)
        guard !access.isEmpty else {
            throw CloudKitError(.zoneNotFound, "zone '\(zoneID.zoneName)' of \(owner) is not shared with you", zoneID: zoneID)
        }
        return (call.actingInSharedZone(of: owner), zoneID, access)
    }

    private func sharedZoneList(_ call: APICall, user: String) async throws -> JSON {
        var zones: [JSON] = []
        for access in try await sharedZones(of: user, container: call.identity.container, environment: call.identity.environment) {
            let acting = call.actingInSharedZone(of: access.owner)
            if let zone = try await store.lookupZones([access.zone], in: acting.database).first ?? nil {
                zones.append(try await zoneJSONWithShare(zone, acting))
            }
        }
        return .object(["zones": .array(zones)])
    }

    private func sharedZoneLookup(_ call: APICall, user: String) async throws -> JSON {
        let readers = try call.body.required("zones").array()
        guard readers.count <= ProtocolLimits.maxOperations else {
            throw CloudKitError(.limitExceeded, "\(readers.count) zones in one lookup; the limit is \(ProtocolLimits.maxOperations)")
        }
        var zones: [JSON] = []
        for reader in readers {
            let wrapped = try reader.optional("zoneID") != nil ? reader : WireReader(.object(["zoneID": reader.json]))
            do {
                let (acting, zoneID, _) = try await sharedZone(call, reader: wrapped, user: user)
                guard let zone = try await store.lookupZones([zoneID.zoneName], in: acting.database).first ?? nil else {
                    throw CloudKitError(.zoneNotFound, "zone '\(zoneID.zoneName)' does not exist", zoneID: zoneID)
                }
                zones.append(try await zoneJSONWithShare(zone, acting))
            } catch let error as CloudKitError {
                zones.append(call.errorJSON(error))
            }
        }
        return .object(["zones": .array(zones)])
    }

    /// `changes/database` in `shared`: the token lists the zones the caller could read and
    /// their versions; zones shared since, or changed, are listed, and zones no longer shared
    /// (or deleted) are listed as deleted.
    private func sharedDatabaseChanges(_ call: APICall, user: String) async throws -> JSON {
        let tokens = try store.changeTokens
        let (container, environment) = (call.identity.container, call.identity.environment)
        let before = try call.body.optionalString("syncToken").map {
            try SharedDatabaseToken(
                payload: tokens.decodeSharedDatabase($0, user: user, container: container, environment: environment))
        } ?? SharedDatabaseToken()
        var now = SharedDatabaseToken()
        var zones: [JSON] = []
        for access in try await sharedZones(of: user, container: call.identity.container, environment: call.identity.environment) {
            let acting = call.actingInSharedZone(of: access.owner)
            guard let zone = try await store.lookupZones([access.zone], in: acting.database).first ?? nil else { continue }
            let key = SharedDatabaseToken.Key(owner: access.owner, zone: access.zone)
            let version = SharedDatabaseToken.Version(incarnation: zone.incarnation, changeVersion: zone.changeVersion)
            now.zones[key] = version
            if before.zones[key] != version { zones.append(try zoneJSON(zone, acting)) }
        }
        for key in before.zones.keys.sorted(by: { ($0.owner, $0.zone) < ($1.owner, $1.zone) }) where now.zones[key] == nil {
            zones.append(
                .object([
                    "zoneID": ZoneID(zoneName: key.zone, ownerRecordName: key.owner).wireJSON, "deleted": .bool(true),
                ]))
        }
        let token = tokens.sharedDatabase(now.payload, user: user, container: container, environment: environment)
        return .object([
            "zones": .array(zones), "syncToken": .string(token), "metaSyncToken": .string(token), "moreComing": .bool(false),
        ])
    }

    private func sharedChangesPage(_ call: APICall, reader: WireReader, user: String) async throws -> JSON {
        let (acting, zoneID, access) = try await sharedZone(call, reader: reader, user: user)
        let token = try reader.optionalString("syncToken")
        let limit = try call.resultsLimit(in: reader)
        let keys = try call.desiredKeys(in: reader)
        let page = try await store.recordChanges(zone: zoneID.zoneName, since: token, limit: limit, in: acting.database)
        let visible = try await readable(page.records, access: access, zone: zoneID.zoneName, acting)
        return .object([
            "zoneID": acting.responseZoneID(zoneID.zoneName).wireJSON,
            "records": try acting.recordsJSON(visible, zoneName: zoneID.zoneName, desiredKeys: keys),
            "syncToken": .string(page.syncToken),
            "moreComing": .bool(page.moreComing),
        ])
    }

    private func sharedLookup(_ call: APICall, user: String) async throws -> JSON {
        let (acting, zoneID, access) = try await sharedZone(call, reader: call.body, user: user)
        let (names, keys) = try Self.lookupRequest(call)
        let found = try await store.lookupRecords(names, zone: zoneID.zoneName, in: acting.database)
        let visible = Set(try await readable(found.compactMap { $0 }, access: access, zone: zoneID.zoneName, acting).map(\.recordName))
        var records: [JSON] = []
        for (index, stored) in found.enumerated() {
            if let stored, visible.contains(stored.recordName) {
                records.append(try acting.recordJSON(stored, zoneName: zoneID.zoneName, desiredKeys: keys[index]))
            } else {
                records.append(
                    acting.errorJSON(CloudKitError(.notFound, "record '\(names[index])' does not exist", recordName: names[index])))
            }
        }
        return .object(["records": .array(records)])
    }

    /// The records of `records` the caller may read, tombstones included (a tombstone keeps
    /// its parent, so a deletion in a shared hierarchy reaches its participants and no other).
    func readable(_ records: [StoredRecord], access: SharedZoneAccess, zone: String, _ acting: APICall) async throws
        -> [StoredRecord]
    {
        if access.zoneWide != nil { return records }
        var cache: [String: StoredRecord?] = [:]
        for record in records where !record.deleted { cache[record.recordName] = record }
        var visible: [StoredRecord] = []
        for record in records {
            let permission = try await access.permission(of: record) { name in
                if let known = cache[name] { return known }
                let found = try await store.lookupRecords([name], zone: zone, in: acting.database).first ?? nil
                cache[name] = found
                return found
            }
            if permission != nil { visible.append(record) }
        }
        return visible
    }

    /// `records/modify` in `shared`: deleting a share leaves it; other writes need READ_WRITE
    /// on every record they touch, and are refused whole otherwise.
    private func sharedModify(_ call: APICall, user: UserIdentity) async throws -> JSON {
        let (acting, zoneID, access) = try await sharedZone(call, reader: call.body, user: user.recordName)
        let readers = try call.body.required("operations").array()
        var leaving: [String] = []
        for reader in readers {
            let type = try reader.required("operationType").string()
            let name = try reader.required("record").optionalString("recordName") ?? ""
            if type == "delete" || type == "forceDelete", access.shares[name] != nil { leaving.append(name) }
        }
        if !leaving.isEmpty {
            guard leaving.count == readers.count else {
                throw CloudKitError.badRequest("leave a share (delete its share record) in a request of its own")
            }
            var items: [JSON] = []
            for share in leaving {
                try await leave(share, owner: access.owner, zone: zoneID.zoneName, user: user.recordName, call.identity)
                items.append(
                    .object([
                        "recordName": .string(share), "deleted": .bool(true),
                        "zoneID": acting.responseZoneID(zoneID.zoneName).wireJSON,
                    ]))
            }
            return .object(["records": .array(items)])
        }
        return try await modifyRecords(acting, shared: access)
    }

    /// Removes `user` from the share (the owner's share record changes; their entry goes).
    func leave(_ share: String, owner: String, zone: String, user: String, _ identity: RequestIdentity) async throws {
        let location = ShareLocation(owner: owner, zone: zone, share: share)
        let database = DatabaseKey(container: identity.container, environment: identity.environment, scope: .private, owner: owner)
        if let found = try await findShare(location, database: database) {
            _ = try await changeShareState(of: found, caller: identity.caller) { $0.leaving(user) }
        }
        // Copies first: the sync finds the owner's database through the entry.
        try? await syncSharedSubscriptions(of: user, identity)
        await shareIndex.remove(participant: user, location, container: identity.container, environment: identity.environment)
    }

    /// Checks the writes of a shared-database modify against the caller's permissions.
    func checkSharedWrites(_ operations: [PendingRecordOperation], access: SharedZoneAccess, zone: String, in database: DatabaseKey)
        async throws
    {
        func denied(_ name: String, _ why: String) -> CloudKitError {
            CloudKitError(.accessDenied, "record '\(name)': \(why)", recordName: name)
        }
        var names = Set(operations.map(\.record.recordName))
        for op in operations { if case .set(let parent)? = op.sharing?.parent { names.insert(parent) } }
        var cache: [String: StoredRecord?] = [:]
        for (name, record) in try await records(named: names, zone: zone, in: database) { cache[name] = record }
        func lookup(_ name: String) async throws -> StoredRecord? {
            if let known = cache[name] { return known }
            let found = try await store.lookupRecords([name], zone: zone, in: database).first ?? nil
            cache[name] = found
            return found
        }
        for op in operations {
            let name = op.record.recordName
            guard op.sharing?.isShare != true, access.shares[name] == nil else {
                throw denied(name, "only the share's owner changes it; delete it to leave the share")
            }
            if let parts = op.sharing, parts.share != .unchanged {
                throw denied(name, "only the owner shares records")
            }
            if let current = try await lookup(name) {
                let permission = try await access.permission(of: current, lookup: lookup)
                guard permission == .readWrite else {
                    throw denied(name, permission == nil ? "it is not shared with you" : "you may read it, not change it")
                }
                if op.type.isDelete, access.roots[name] != nil {
                    throw denied(name, "only the owner deletes the root of a shared hierarchy")
                }
            } else if !op.type.isDelete, access.zoneWide != .readWrite {
                guard case .set(let parent)? = op.sharing?.parent, let parentRecord = try await lookup(parent),
                    try await access.permission(of: parentRecord, lookup: lookup) == .readWrite
                else {
                    throw denied(name, "a new record in a shared hierarchy needs a parent you may change")
                }
            }
            if access.zoneWide != .readWrite, let parts = op.sharing {
                if case .set(let parent) = parts.parent {
                    guard let parentRecord = try await lookup(parent),
                        try await access.permission(of: parentRecord, lookup: lookup) == .readWrite
                    else { throw denied(name, "its new parent '\(parent)' is not a record you may change") }
                }
                if parts.parent == .removed { throw denied(name, "removing its parent would take it out of the share") }
            }
        }
    }
}

/// The sync token of the `shared` database: the zones the caller could read, and each
/// one's incarnation and version, when the token was made. It grants nothing (every read
/// checks the caller's shares), yet it is signed and bound to its user like every token
/// (``ChangeTokens/sharedDatabase(_:user:container:environment:)``): a client relies on
/// another user's or an altered token being refused.
struct SharedDatabaseToken: Sendable {
    struct Key: Hashable, Sendable {
        var owner: String
        var zone: String
    }

    struct Version: Hashable, Sendable {
        var incarnation: Int64
        var changeVersion: Int64
    }

    var zones: [Key: Version] = [:]

    init() {}

    /// The zones of a signed token's payload (``ChangeTokens/decodeSharedDatabase(_:user:container:environment:)``).
    init(payload: [UInt8]) throws(CloudKitError) {
        guard let json = try? JSON.parse(payload), let entries = json.array else {
            throw CloudKitError.badRequest("'syncToken' is not a token of the shared database")
        }
        for entry in entries {
            guard let parts = entry.array, parts.count == 4, let owner = parts[0].string, let zone = parts[1].string,
                let incarnation = parts[2].int64, let version = parts[3].int64
            else { throw CloudKitError.badRequest("'syncToken' is not a token of the shared database") }
            zones[Key(owner: owner, zone: zone)] = Version(incarnation: incarnation, changeVersion: version)
        }
    }

    /// The zones as the payload a token signs: a JSON array of `[owner, zone, incarnation, version]`.
    var payload: [UInt8] {
        let entries: [JSON] = zones.sorted { ($0.key.owner, $0.key.zone) < ($1.key.owner, $1.key.zone) }.map {
            .array([.string($0.key.owner), .string($0.key.zone), .int($0.value.incarnation), .int($0.value.changeVersion)])
        }
        return JSON.array(entries).serializedBytes()
    }
}
