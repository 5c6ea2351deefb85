import NimbusProtocol

/// A session opened for a web service that acts on the signed-in user's behalf.
public struct WebServiceSession: Sendable, Equatable {
    /// The new session's web auth token (`ckWebAuthToken`).
    public let webAuthToken: String
    /// The new session's ID, as `sessions/list` and `sessions/revoke` name it.
    public let sessionID: String
}

extension Container {
    /// Opens another session of the signed-in user in this container, for a web service that
    /// calls the API on the user's behalf (`sessions/create`; what CloudKit's
    /// `CKFetchWebAuthTokenOperation` fetches). This container's own token keeps working; the
    /// new session is listed, expires and is revoked like any other.
    /// - Parameters:
    ///   - apiToken: the API token the web service will use, sent in place of this
    ///     container's (the server refuses one that is not the container's); `nil`: this
    ///     container's.
    ///   - deviceName: the name the user's list of sessions shows (1 to 100 bytes; `nil`:
    ///     the server's `web service`).
    /// - Throws: ``NimbusError/Code/notAuthenticated`` without a signed-in user's web auth
    ///   token or with a refused API token.
    public func openWebServiceSession(apiToken: String? = nil, deviceName: String? = nil) async throws
        -> WebServiceSession
    {
        guard case .tokens(let ownAPIToken, let webAuthToken?) = credentials.kind else {
            throw NimbusError(.notAuthenticated, "a web service session is opened by a signed-in user's web auth token")
        }
        let opener = with(credentials: .apiToken(apiToken ?? ownAPIToken, webAuthToken: webAuthToken))
        var body: [String: JSON] = [:]
        if let deviceName { body["deviceName"] = .string(deviceName) }
        let answer = try await opener.privateCloudDatabase.send("sessions/create", body: .object(body))
        guard let token = answer["ckWebAuthToken"]?.string, let id = answer["sessionID"]?.string else {
            throw NimbusError.malformedResponse("sessions/create returned no ckWebAuthToken or sessionID")
        }
        return WebServiceSession(webAuthToken: token, sessionID: id)
    }
}
