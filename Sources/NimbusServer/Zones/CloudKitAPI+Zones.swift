import NimbusProtocol
import NimbusStore

extension CloudKitAPI {
    /// The zone dictionary: `{zoneID, syncToken, atomic}`.
    func zoneJSON(_ zone: ZoneState, _ call: APICall) throws -> JSON {
        let syncToken = try store.changeTokens.records(
            zone: zone.zoneName, state: zone, version: zone.changeVersion, in: call.database)
        return .object([
            "zoneID": call.responseZoneID(zone.zoneName).wireJSON,
            "syncToken": .string(syncToken),
            "atomic": .bool(zone.zoneName != ZoneID.defaultZoneName),
        ])
    }

    /// ``zoneJSON(_:_:)`` and, for a zone shared whole, `share`: a reference to its share record
    /// (`cloudkit.zoneshare`), what CloudKit's `CKRecordZone.share` holds. A Nimbus addition to
    /// the zone dictionary of `zones/list` and `zones/lookup` (Apple's framework learns it over
    /// its own protocol; CloudKit Web Services clients ignore the key).
    func zoneJSONWithShare(_ zone: ZoneState, _ call: APICall) async throws -> JSON {
        let json = try zoneJSON(zone, call)
        guard zone.zoneName != ZoneID.defaultZoneName, case .object(var fields) = json,
            let share = try await store.lookupRecords([SystemFields.zoneShareName], zone: zone.zoneName, in: call.database)
                .first ?? nil,
            !share.deleted
        else { return json }
        fields["share"] = .object([
            "recordName": .string(SystemFields.zoneShareName), "zoneID": call.responseZoneID(zone.zoneName).wireJSON,
            "action": .string("NONE"),
        ])
        return .object(fields)
    }

    func deletedZoneJSON(_ zoneName: String, _ call: APICall) -> JSON {
        .object(["zoneID": call.responseZoneID(zoneName).wireJSON, "deleted": .bool(true)])
    }

    /// `zones/list`.
    func listZones(_ call: APICall) async throws -> JSON {
        var zones: [JSON] = []
        for zone in try await store.listZones(in: call.database) { zones.append(try await zoneJSONWithShare(zone, call)) }
        return .object(["zones": .array(zones)])
    }

    /// `zones/lookup`.
    func lookupZones(_ call: APICall) async throws -> JSON {
        let readers = try call.body.required("zones").array()
        guard readers.count <= ProtocolLimits.maxOperations else {
            throw CloudKitError(.limitExceeded, "\(readers.count) zones in one lookup; the limit is \(ProtocolLimits.maxOperations)")
        }
        var zoneIDs: [ZoneID] = []
        for reader in readers {
            // Accept both {zoneName, ownerRecordName} and {zoneID: {...}}.
            zoneIDs.append(try call.requestZoneID(try reader.optional("zoneID") ?? reader))
        }
        let found = try await store.lookupZones(zoneIDs.map(\.zoneName), in: call.database)
        var zones: [JSON] = []
        for (zoneID, zone) in zip(zoneIDs, found) {
            if let zone {
                zones.append(try await zoneJSONWithShare(zone, call))
            } else {
                zones.append(call.errorJSON(
                    CloudKitError(
                        .zoneNotFound, "zone '\(zoneID.zoneName)' does not exist",
                        zoneID: call.responseZoneID(zoneID.zoneName))))
            }
        }
        return .object(["zones": .array(zones)])
    }

    /// `zones/modify`: `operations[{operationType: create|delete, zone: {zoneID}}]`.
    func modifyZones(_ call: APICall) async throws -> JSON {
        guard call.identity.caller != nil else {
            throw CloudKitError(.authenticationRequired, "changing zones needs a signed-in user or a server-to-server key")
        }
        let readers = try call.body.required("operations").array()
        guard readers.count <= ProtocolLimits.maxOperations else {
            throw CloudKitError(
                .limitExceeded, "\(readers.count) operations in one request; the limit is \(ProtocolLimits.maxOperations)")
        }
        var operations: [ZoneOperation] = []
        for reader in readers {
            let typeName = try reader.required("operationType").string()
            let zoneReader = try reader.required("zone")
            let zoneID = try call.requestZoneID(try zoneReader.optional("zoneID") ?? zoneReader)
            switch typeName {
            case "create":
                guard call.identity.scope != .public else {
                    throw CloudKitError.badRequest("the public database has only the default zone; custom zones live in private databases")
                }
                guard !zoneID.zoneName.hasPrefix("_") else {
                    throw CloudKitError.badRequest("'\(zoneReader.path)': a zone name may not start with '_'")
                }
                operations.append(.create(zoneName: zoneID.zoneName))
            case "delete", "forceDelete":
                operations.append(.delete(zoneName: zoneID.zoneName))
            default:
                throw CloudKitError.badRequest(
                    "'\(reader.path).operationType': unknown zone operation '\(typeName)'; expected create or delete")
            }
        }
        let outcome = try await commits.modifyZones(operations, caller: call.identity.caller, in: call.database)
        let zones: [JSON] = try outcome.results.map { result in
            switch result {
            case .saved(let zone): return try zoneJSON(zone, call)
            case .deleted(let name): return deletedZoneJSON(name, call)
            case .failed(let name, var error):
                error.zoneID = call.responseZoneID(name)
                return call.errorJSON(error)
            }
        }
        return .object(["zones": .array(zones)])
    }

    /// `zones/changes`: zones created or deleted since `metaSyncToken` (or `syncToken`).
    func zoneChanges(_ call: APICall) async throws -> JSON {
        var token = try call.body.optionalString("metaSyncToken")
        if token == nil { token = try call.body.optionalString("syncToken") }
        let page = try await store.zoneMetaChanges(since: token, limit: try call.resultsLimit(), in: call.database)
        let zones = try page.zones.map { try $0.deleted ? deletedZoneJSON($0.zoneName, call) : zoneJSON($0, call) }
        return .object([
            "zones": .array(zones),
            "metaSyncToken": .string(page.syncToken),
            "syncToken": .string(page.syncToken),
            "moreComing": .bool(page.moreComing),
        ])
    }

    /// `changes/database`: zones whose records or existence changed since `syncToken`.
    func databaseChanges(_ call: APICall) async throws -> JSON {
        let page = try await store.databaseChanges(
            since: try call.body.optionalString("syncToken"), limit: try call.resultsLimit(), in: call.database)
        let zones = try page.zones.map { try $0.deleted ? deletedZoneJSON($0.zoneName, call) : zoneJSON($0, call) }
        return .object([
            "zones": .array(zones),
            "syncToken": .string(page.syncToken),
            "moreComing": .bool(page.moreComing),
        ])
    }
}
