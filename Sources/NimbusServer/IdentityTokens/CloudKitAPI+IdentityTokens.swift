import NimbusProtocol
import NimbusStore

extension CloudKitAPI {
    /// `accounts/signin/idtoken` `{idToken, nonce?, deviceName?, platform?}` →
    /// `{ckWebAuthToken, sessionID, userRecordName}`: an identity provider's ID token
    /// exchanged for a session (needs only the API token).
    func identityTokenSignIn(_ call: APICall) async throws -> JSON {
        guard let identitySignIn else {
            throw CloudKitError(.internalError, "identity tokens are not set up on this server")
        }
        let tokenReader = try call.body.required("idToken")
        let idToken = try tokenReader.string()
        let nonce = try call.body.optionalString("nonce")
        let device = try call.sessionDevice()
        let issued = try await identitySignIn.signIn(
            idToken: idToken, nonce: nonce, container: call.identity.container, device: device, address: call.peerAddress)
        return .object([
            "ckWebAuthToken": .string(issued.token), "sessionID": .string(issued.session.id),
            "userRecordName": .string(issued.session.user.recordName),
        ])
    }
}

extension APICall {
    /// The device a sign-in names (`deviceName`, `platform`), checked.
    func sessionDevice() throws(CloudKitError) -> SessionDevice {
        let name = try body.optionalString("deviceName") ?? "unnamed device"
        let platform = try body.optionalString("platform") ?? "unknown"
        guard let device = SessionDevice.checked(name: name, platform: platform) else {
            throw CloudKitError.badRequest("'deviceName' and 'platform' are 1 to 100 bytes each, without control characters")
        }
        return device
    }
}
