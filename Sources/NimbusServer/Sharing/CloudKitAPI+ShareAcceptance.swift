import NimbusProtocol
import NimbusStore

extension CloudKitAPI {
    /// `records/resolve`: share metadata by short GUID, for a prospective participant.
    func resolveShares(_ call: APICall) async throws -> JSON {
        try await eachShortGUID(call) { found, request in
            try await shareInfo(found, request: request, call)
        }
    }

    /// `records/accept`: the caller becomes an accepted participant of each share.
    func acceptShares(_ call: APICall) async throws -> JSON {
        guard let user = call.identity.user else {
            throw CloudKitError(.authenticationRequired, "accepting a share needs a signed-in user (ckWebAuthToken)")
        }
        return try await eachShortGUID(call) { found, request in
            guard let first = found.state.accepting(user, newID: shareIDs) else { throw Self.noShare }
            if first != found.state {
                // The index first: an entry whose share never accepted the caller grants nothing.
                try await shareIndex.add(
                    participant: user.recordName, found.location, container: call.identity.container,
                    environment: call.identity.environment)
                // Copies of the user's shared subscriptions next: the acceptance's own commit
                // then tells their other devices to fetch the new zone.
                try await syncSharedSubscriptions(of: user.recordName, call.identity, accepting: found.location)
            }
            let accepted = try await changeShareState(of: found, caller: call.identity.caller) { state throws(CloudKitError) in
                guard let accepted = state.accepting(user, newID: shareIDs) else { throw Self.noShare }
                return accepted
            }
            return try await shareInfo(accepted, request: request, call)
        }
    }

    /// Saves `change(state)` as the share's state, compared and swapped on the share record's
    /// change tag: a concurrent change (another acceptance, the owner's edit) makes it read
    /// the share again and retry. Answers the share as saved (unchanged when `change` is).
    func changeShareState(
        of found: FoundShare, caller: Caller?, _ change: (ShareState) throws(CloudKitError) -> ShareState
    ) async throws -> FoundShare {
        var found = found
        for _ in 0..<8 {
            let changed = try change(found.state)
            if changed == found.state { return found }
            var record = found.record.record(zoneID: ZoneID(zoneName: found.location.zone, ownerRecordName: found.location.owner))
            record.fields = [SystemFields.shareState: .string(changed.storedText)]
            let outcome = try await commits.modifyRecords(
                [RecordOperation(type: .update, record: record)], zone: found.location.zone, atomic: false,
                policy: WritePolicy(creatorOnlyWrites: false, now: now()), caller: caller ?? ShareIndex.writer,
                in: found.database)
            switch outcome.results.first {
            case .saved(let stored)?:
                found.record = stored
                found.state = changed
                return found
            case .failed(let error)? where error.code == .conflict:
                guard let again = try await findShare(found.location, database: found.database) else { throw Self.noShare }
                found = again
            case .failed(let error)?: throw error
            default: throw Self.noShare
            }
        }
        throw CloudKitError(.tryAgainLater, "the share is changing too often to change it now; try again")
    }

    static let noShare = CloudKitError(.notFound, "no share with this shortGUID is open to you")

    /// A share found by its short GUID.
    struct FoundShare: Sendable {
        var location: ShareLocation
        var database: DatabaseKey
        var record: StoredRecord
        var state: ShareState
    }

    /// One short GUID of the request.
    struct ShortGUIDRequest: Sendable {
        var value: String
        var fetchRootRecord: Bool
        var rootDesiredKeys: Set<String>?
    }

    private func eachShortGUID(
        _ call: APICall, _ body: (FoundShare, ShortGUIDRequest) async throws -> JSON
    ) async throws -> JSON {
        let readers = try call.body.required("shortGUIDs").array()
        guard readers.count <= ProtocolLimits.maxOperations else {
            throw CloudKitError(.limitExceeded, "\(readers.count) short GUIDs in one request; the limit is \(ProtocolLimits.maxOperations)")
        }
        var requests: [ShortGUIDRequest] = []
        for reader in readers {
            let value = try reader.required("value").string()
            guard !value.isEmpty, value.utf8.count <= 64 else {
                throw CloudKitError.badRequest("'\(reader.path).value' is not a short GUID")
            }
            requests.append(
                ShortGUIDRequest(
                    value: value, fetchRootRecord: try reader.optionalBool("shouldFetchRootRecord") ?? false,
                    rootDesiredKeys: try reader.optional("rootRecordDesiredKeys").map { keys throws(CloudKitError) in
                        Set(try keys.stringArray())
                    }))
        }
        var results: [JSON] = []
        for request in requests {
            do {
                guard
                    let location = try await shareIndex.share(
                        shortGUID: request.value, container: call.identity.container,
                        environment: call.identity.environment),
                    let found = try await findShare(
                        location,
                        database: DatabaseKey(
                            container: call.identity.container, environment: call.identity.environment, scope: .private,
                            owner: location.owner)),
                    found.state.shortGUID == request.value
                else { throw Self.noShare }
                // Open to the owner, an invited participant, or anyone when the share is public.
                let invited = call.identity.user.flatMap { found.state.invitation(for: $0) }
                guard invited.map({ $0.status != .removed }) ?? (found.state.publicPermission != .none) else {
                    throw Self.noShare
                }
                results.append(try await body(found, request))
            } catch let error as CloudKitError {
                var item = call.errorJSON(error)
                if case .object(var members) = item {
                    members["shortGUID"] = .string(request.value)
                    item = .object(members)
                }
                results.append(item)
            }
        }
        return .object(["results": .array(results)])
    }

    func findShare(_ location: ShareLocation, database: DatabaseKey) async throws -> FoundShare? {
        let record: StoredRecord?
        do {
            record = try await store.lookupRecords([location.share], zone: location.zone, in: database).first ?? nil
        } catch let error as CloudKitError where error.code == .zoneNotFound {
            return nil
        }
        guard let record, record.recordType == SystemFields.shareType,
            let state = record.fields()[SystemFields.shareState]?.stringValue.flatMap(ShareState.init(storedText:))
        else { return nil }
        return FoundShare(location: location, database: database, record: record, state: state)
    }

    /// The result dictionary of `records/resolve` and `records/accept`.
    private func shareInfo(_ found: FoundShare, request: ShortGUIDRequest, _ call: APICall) async throws -> JSON {
        let acting = call.actingInSharedZone(of: found.location.owner)
        let zoneID = ZoneID(zoneName: found.location.zone, ownerRecordName: found.location.owner)
        var members: [String: JSON] = [
            "shortGUID": .string(request.value),
            "containerIdentifier": .string(call.identity.container),
            "environment": .string(call.identity.environment.rawValue),
            "databaseScope": .string("SHARED"),
            "zoneID": zoneID.wireJSON,
            "share": try acting.recordJSON(found.record, zoneName: found.location.zone, desiredKeys: nil),
        ]
        let root = found.record.fields()[SystemFields.root]?.referenceValue?.recordName
        if let root {
            members["rootRecordName"] = .string(root)
            if request.fetchRootRecord,
                let stored = try await store.lookupRecords([root], zone: found.location.zone, in: found.database).first ?? nil
            {
                members["rootRecord"] = try acting.recordJSON(stored, zoneName: found.location.zone, desiredKeys: request.rootDesiredKeys)
            }
        }
        var owner: [String: JSON] = ["userRecordName": .string(found.location.owner)]
        if let identity = try? await accounts.user(recordName: found.location.owner, container: call.identity.container) {
            var names: [String: JSON] = [:]
            if let first = identity.firstName { names["givenName"] = .string(first) }
            if let last = identity.lastName { names["familyName"] = .string(last) }
            if !names.isEmpty { owner["nameComponents"] = .object(names) }
        }
        members["ownerIdentity"] = .object(owner)
        let me = call.identity.user.flatMap { found.state.invitation(for: $0) }
        members["participantType"] = .string(me?.kind.rawValue ?? ShareState.Kind.publicUser.rawValue)
        members["participantStatus"] = .string(me?.status.rawValue ?? "UNKNOWN")
        members["participantPermission"] = .string(me?.permission.rawValue ?? found.state.publicPermission.rawValue)
        return .object(members)
    }
}
