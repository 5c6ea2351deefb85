import NimbusProtocol
import NimbusStore

extension CloudKitAPI {
    /// `users/current` and `users/caller`: the signed-in user's record name in this container.
    func currentUser(_ call: APICall) async throws -> JSON {
        if let user = call.identity.user {
            var members: [String: JSON] = ["userRecordName": .string(user.recordName)]
            if let firstName = user.firstName { members["firstName"] = .string(firstName) }
            if let lastName = user.lastName { members["lastName"] = .string(lastName) }
            return .object(members)
        }
        if let caller = call.identity.caller {
            return .object(["userRecordName": .string(caller.userRecordName)])
        }
        throw CloudKitError(.authenticationRequired, "no user is signed in: pass ckWebAuthToken")
    }
}
