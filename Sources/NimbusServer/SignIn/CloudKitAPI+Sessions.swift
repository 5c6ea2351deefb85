import NimbusProtocol
import NimbusStore

extension CloudKitAPI {
    /// `sessions/list`: the signed-in user's live sessions in the container, oldest first,
    /// `current` marking the one the request came with.
    func listSessions(_ call: APICall) async throws -> JSON {
        let user = try Self.sessionUser(call)
        let policy = signIn.map { SessionPolicy($0.settings) } ?? SessionPolicy(SignInSettings())
        let sessions = try await signInStore.listSessions(container: call.identity.container, userName: user.name)
            .filter { !$0.revoked && !policy.isExpired(lastSeenAt: $0.lastSeenAt, now: call.now) }
        return .object([
            "sessions": .array(
                sessions.map { session in
                    .object([
                        "sessionID": .string(session.id), "deviceName": .string(session.device.name),
                        "platform": .string(session.device.platform), "created": .int(session.createdAt),
                        "lastSeen": .int(session.lastSeenAt), "current": .bool(session.id == call.identity.sessionID),
                    ])
                })
        ])
    }

    /// `sessions/revoke` `{sessionIDs: [...]}`: revokes sessions of the signed-in user in the
    /// container (the current one too, if listed) and closes their push connections. Each
    /// ID answers `{sessionID, revoked: true}` or a NOT_FOUND item (unknown, revoked, or
    /// another user's: the same answer).
    func revokeSessions(_ call: APICall) async throws -> JSON {
        let user = try Self.sessionUser(call)
        let ids = try call.body.required("sessionIDs").stringArray()
        guard ids.count <= ProtocolLimits.maxOperations else {
            throw CloudKitError(.limitExceeded, "at most \(ProtocolLimits.maxOperations) sessionIDs per request")
        }
        let own = Set(
            try await signInStore.listSessions(container: call.identity.container, userName: user.name)
                .filter { !$0.revoked }.map(\.id))
        var items: [JSON] = []
        var revoked: Set<String> = []
        for id in ids {
            if own.contains(id), !revoked.contains(id), try await signInStore.revokeSession(id: id) {
                revoked.insert(id)
                items.append(.object(["sessionID": .string(id), "revoked": .bool(true)]))
            } else {
                var item = CloudKitError(.notFound, "no live session \(id) of yours; list them with sessions/list")
                    .wireJSON(uuid: APIResponder.newUUID())
                if case .object(var members) = item {
                    members["sessionID"] = .string(id)
                    item = .object(members)
                }
                items.append(item)
            }
        }
        await pushSessions?.closeConnections(ofSessions: revoked)
        return .object(["sessions": .array(items)])
    }

    /// `sessions/refresh`: a new web auth token for the request's session; the old token
    /// stops working at once. `{ckWebAuthToken, sessionID}`.
    func refreshSession(_ call: APICall) async throws -> JSON {
        _ = try Self.sessionUser(call)
        guard let id = call.identity.sessionID,
            let issued = try await signInStore.refreshSession(id: id, at: call.now)
        else {
            throw CloudKitError(.authenticationFailed, "the ckWebAuthToken's session is gone; sign in again")
        }
        return .object(["ckWebAuthToken": .string(issued.token), "sessionID": .string(issued.session.id)])
    }

    /// `sessions/create` `{deviceName?}`: a new session of the request's user in the
    /// container, for a web service that acts on the user's behalf (what CloudKit's
    /// `CKFetchWebAuthTokenOperation` fetches). Only a session may open another: the new one
    /// is listed by `sessions/list` under `deviceName` (default `web service`, platform
    /// `web-service`) and revoked like any other; the request's own session is unchanged.
    /// `{ckWebAuthToken, sessionID}`.
    func createSession(_ call: APICall) async throws -> JSON {
        let user = try Self.sessionUser(call)
        guard call.identity.sessionID != nil else {
            throw CloudKitError(.authenticationRequired, "only a signed-in session can open another: pass ckWebAuthToken")
        }
        let name = try call.body.optional("deviceName")?.string() ?? "web service"
        guard let device = SessionDevice.checked(name: name, platform: "web-service") else {
            throw CloudKitError.badRequest("deviceName must be 1 to 100 bytes without control characters")
        }
        let issued = try await signInStore.createSession(user: user.name, container: call.identity.container, device: device)
        return .object(["ckWebAuthToken": .string(issued.token), "sessionID": .string(issued.session.id)])
    }

    /// The store, as sessions see it.
    var signInStore: any NimbusStorage {
        get throws {
            guard let store = signIn?.store else {
                throw CloudKitError(.internalError, "sessions are not set up on this server")
            }
            return store
        }
    }

    static func sessionUser(_ call: APICall) throws(CloudKitError) -> UserIdentity {
        guard let user = call.identity.user else {
            throw CloudKitError(.authenticationRequired, "sessions belong to a signed-in user: pass ckWebAuthToken")
        }
        return user
    }
}
