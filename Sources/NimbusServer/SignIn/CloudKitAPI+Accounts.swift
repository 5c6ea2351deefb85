import NimbusProtocol
import NimbusStore

extension CloudKitAPI {
    /// The built-in account operations, which need only the API token:
    ///
    /// - `accounts/signup` `{email, password}` → `{status: "CHECK_MAIL"}`, whatever the address
    /// - `accounts/verify` `{email, code}` → `{status: "VERIFIED"}`
    /// - `accounts/signin` `{email, password, deviceName?, platform?}` →
    ///   `{ckWebAuthToken, sessionID, userRecordName}`
    /// - `accounts/password/forgot` `{email}` → `{status: "CHECK_MAIL"}`, whatever the address
    /// - `accounts/password/reset` `{email, code, password}` → `{status: "PASSWORD_SET", revokedSessions}`
    func accountEntry(_ call: APICall) async throws -> JSON {
        guard let accounts = signIn else {
            throw CloudKitError(.internalError, "built-in accounts are not set up on this server")
        }
        let container = call.identity.container
        let links = SignInLinks(origin: call.mailOrigin, container: container, environment: call.identity.environment)
        let body = call.body
        switch call.operation {
        case .accountsSignUp:
            try await accounts.signUp(
                email: try body.required("email").string(), password: try body.required("password").string(),
                container: container, links: links)
            return .object(["status": "CHECK_MAIL"])
        case .accountsVerify:
            try await accounts.verify(
                email: try body.required("email").string(), code: try body.required("code").string(),
                container: container)
            return .object(["status": "VERIFIED"])
        case .accountsSignIn:
            let device = try call.sessionDevice()
            let issued = try await accounts.signIn(
                email: try body.required("email").string(), password: try body.required("password").string(),
                container: container, device: device, address: call.peerAddress)
            return .object([
                "ckWebAuthToken": .string(issued.token), "sessionID": .string(issued.session.id),
                "userRecordName": .string(issued.session.user.recordName),
            ])
        case .accountsForgotPassword:
            try await accounts.forgotPassword(email: try body.required("email").string(), container: container, links: links)
            return .object(["status": "CHECK_MAIL"])
        case .accountsResetPassword:
            let revoked = try await accounts.resetPassword(
                email: try body.required("email").string(), code: try body.required("code").string(),
                newPassword: try body.required("password").string(), container: container)
            await pushSessions?.closeConnections(ofSessions: Set(revoked))
            return .object(["status": "PASSWORD_SET", "revokedSessions": .int(Int64(revoked.count))])
        default:
            throw CloudKitError(.notFound, "no such operation: \(call.operation.rawValue)")
        }
    }
}
