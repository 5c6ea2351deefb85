import NimbusProtocol
import NimbusStore

extension CloudKitAPI {
    /// `subscriptions/modify`: `operations[{operationType: create|update|delete, subscription}]`.
    /// Saving replaces a subscription with the same ID (create and update both save).
    func modifySubscriptions(_ call: APICall) async throws -> JSON {
        let owner = try subscriber(call)
        let readers = try call.body.required("operations").array()
        guard readers.count <= ProtocolLimits.maxOperations else {
            throw CloudKitError(
                .limitExceeded,
                "\(readers.count) operations in one request; the limit is \(ProtocolLimits.maxOperations): split the batch")
        }
        let access = try await publicAccess(call)
        var operations: [SubscriptionOperation] = []
        for reader in readers {
            let typeName = try reader.required("operationType").string()
            let subscriptionReader = try reader.required("subscription")
            switch typeName {
            case "create", "update", "forceUpdate", "replace", "forceReplace":
                let subscription = try SubscriptionDefinition(wire: subscriptionReader)
                try check(subscription, reader: subscriptionReader, access: access, call)
                operations.append(.save(subscription))
            case "delete", "forceDelete":
                let idReader = try subscriptionReader.required("subscriptionID")
                let id = try idReader.string()
                try NameRules.checkName(id, at: idReader.path)
                operations.append(.delete(subscriptionID: id))
            default:
                throw CloudKitError.badRequest(
                    "'\(reader.path).operationType': unknown subscription operation '\(typeName)'; expected create, update or delete")
            }
        }
        let results = try await notifications.modifySubscriptions(operations, owner: owner, in: call.database)
        if call.identity.scope == .shared { try await syncSharedSubscriptions(of: owner, call.identity) }
        return .object([
            "subscriptions": .array(
                results.map { result in
                    switch result {
                    case .saved(let subscription):
                        return subscription.wireJSON(zoneOwner: call.database.owner)
                    case .deleted(let id):
                        return .object(["subscriptionID": .string(id), "deleted": .bool(true)])
                    case .failed(let id, let error):
                        return subscriptionError(error, id: id, call)
                    }
                })
        ])
    }

    /// `subscriptions/list`: the caller's subscriptions in the database.
    func listSubscriptions(_ call: APICall) async throws -> JSON {
        let subscriptions = try await notifications.listSubscriptions(owner: try subscriber(call), in: call.database)
        return .object(["subscriptions": .array(subscriptions.map { $0.wireJSON(zoneOwner: call.database.owner) })])
    }

    /// `subscriptions/lookup`: `subscriptions[{subscriptionID}]`; NOT_FOUND in place of missing ones.
    func lookupSubscriptions(_ call: APICall) async throws -> JSON {
        let owner = try subscriber(call)
        let readers = try call.body.required("subscriptions").array()
        guard readers.count <= ProtocolLimits.maxOperations else {
            throw CloudKitError(
                .limitExceeded, "\(readers.count) subscriptions in one lookup; the limit is \(ProtocolLimits.maxOperations)")
        }
        var ids: [String] = []
        for reader in readers {
            var idReader = reader
            if reader.json.string == nil { idReader = try reader.required("subscriptionID") }
            let id = try idReader.string()
            try NameRules.checkName(id, at: idReader.path)
            ids.append(id)
        }
        let found = try await notifications.lookupSubscriptions(ids, owner: owner, in: call.database)
        return .object([
            "subscriptions": .array(
                zip(ids, found).map { id, subscription in
                    guard let subscription else {
                        return subscriptionError(
                            CloudKitError(.notFound, "subscription '\(id)' does not exist"), id: id, call)
                    }
                    return subscription.wireJSON(zoneOwner: call.database.owner)
                })
        ])
    }

    /// Subscriptions belong to a signed-in user, who is the one notified.
    private func subscriber(_ call: APICall) throws(CloudKitError) -> String {
        guard let user = call.identity.user else {
            throw CloudKitError(
                .authenticationRequired, "subscriptions belong to a signed-in user (the one notified): pass ckWebAuthToken")
        }
        return user.recordName
    }

    /// The rules CloudKit applies to where each kind of subscription may live.
    private func check(
        _ subscription: SubscriptionDefinition, reader: WireReader, access: PublicAccess?, _ call: APICall
    ) throws(CloudKitError) {
        try NameRules.checkName(subscription.subscriptionID, at: "\(reader.path).subscriptionID")
        if call.identity.scope == .shared, subscription.typeName != "database" {
            throw CloudKitError.badRequest(
                "'\(reader.path)': the shared database takes database subscriptions only (as in CloudKit); "
                    + "a database subscription fires for every zone shared with you")
        }
        if let zoneReader = try reader.optional("zoneID") { _ = try call.requestZoneID(zoneReader) }
        switch subscription.kind {
        case .query(let query, _, _, _):
            try NameRules.check(query, at: "\(reader.path).query")
            // A query subscription tells about every matching record: it needs READ on the
            // type for all of its records, not only the caller's own.
            if let access, !access.allows(.read, query.recordType, creator: nil, accessor: call.identity.accessor) {
                throw access.denial(.read, query.recordType, accessor: call.identity.accessor)
            }
        case .zone(let zoneName, _):
            guard call.identity.scope != .public else {
                throw .badRequest(
                    "the public database supports query subscriptions only (it has no custom zones); "
                        + "subscribe with subscriptionType \"query\"")
            }
            guard zoneName != ZoneID.defaultZoneName else {
                throw .badRequest(
                    "zone subscriptions are not supported on the default zone, as in CloudKit; create a custom zone, "
                        + "or use a database or query subscription")
            }
        case .database:
            guard call.identity.scope != .public else {
                throw .badRequest(
                    "the public database supports query subscriptions only; database subscriptions watch a private database")
            }
        }
    }

    private func subscriptionError(_ error: CloudKitError, id: String, _ call: APICall) -> JSON {
        guard case .object(var members) = call.errorJSON(error) else { return call.errorJSON(error) }
        members["subscriptionID"] = .string(id)
        return .object(members)
    }
}
