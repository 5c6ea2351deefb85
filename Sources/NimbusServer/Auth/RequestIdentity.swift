import NimbusProtocol
import NimbusStore

/// Who is calling and which database the request addresses, after authentication.
struct RequestIdentity: Sendable {
    var container: String
    var environment: ContainerEnvironment
    var scope: DatabaseScope
    /// The signed-in user (from `ckWebAuthToken`), if any.
    var user: UserIdentity?
    /// A server-to-server key: the container's administrator.
    var serverKeyID: String?
    /// The device the client says it is (`X-Nimbus-Device-ID` header or `deviceID` query).
    var deviceID: String?
    /// The session of the web auth token, if the user came with one.
    var sessionID: String? = nil
    /// Set while serving the `shared` database: the owner whose zone the caller reaches
    /// through a share (``database`` is then that owner's private database).
    var sharedOwner: String? = nil

    var isAdmin: Bool { serverKeyID != nil }

    /// The caller for writes: the user, or the server key acting as administrator.
    var caller: Caller? {
        if let user { return Caller(userRecordName: user.recordName, deviceID: deviceID, isAdmin: false) }
        if let serverKeyID { return Caller(userRecordName: "_server_\(serverKeyID)", deviceID: deviceID, isAdmin: true) }
        return nil
    }

    /// The database: the user's own private database (never another's, whatever the request
    /// says), or the container environment's public database.
    var database: DatabaseKey {
        if let sharedOwner {
            return DatabaseKey(container: container, environment: environment, scope: .private, owner: sharedOwner)
        }
        let owner = scope == .public ? DatabaseKey.publicOwner : (user?.recordName ?? "")
        return DatabaseKey(container: container, environment: environment, scope: scope, owner: owner)
    }

    /// Checks a zone ID from the request against the database the caller may reach.
    func checkOwner(of zoneID: ZoneID) throws(CloudKitError) {
        guard let owner = zoneID.ownerRecordName else { return }
        let acceptable: Set<String> = ["__defaultOwner__", DatabaseKey.publicOwner, database.owner]
        guard acceptable.contains(owner) else {
            throw CloudKitError(
                .accessDenied,
                "zone '\(zoneID.zoneName)' of owner \(owner) is not in this database; a \(scope.rawValue) database "
                    + "only holds the zones of \(scope == .public ? "the container" : "the signed-in user")",
                zoneID: zoneID)
        }
    }
}
