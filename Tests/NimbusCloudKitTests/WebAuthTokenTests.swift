import Foundation
import NimbusCloudKit
import NimbusTestSupport
import Testing

/// `CKFetchWebAuthTokenOperation`: a token a web service uses to act for the signed-in user.
@Suite("Web auth token")
struct WebAuthTokenTests {
    @Test(arguments: Engine.available)
    func theFetchedTokenActsForTheUserAlongsideTheAppsOwn(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let connection = try await server.connection(user: "ada")
            let app = CKContainer(identifier: CloudKitServer.containerID, connection: connection)
            let log = CallbackLog()
            let fetched = Locked<String?>(nil)
            let operation = CKFetchWebAuthTokenOperation(apiToken: server.apiToken)
            operation.database = app.privateCloudDatabase
            operation.fetchWebAuthTokenResultBlock = { result in
                fetched.set(try? result.get())
                log.append("result")
            }
            operation.fetchWebAuthTokenCompletionBlock = { token, error in
                log.append("legacy \(token != nil) \(error == nil)")
            }
            app.add(operation)
            try await finished(operation)
            #expect(log.events == ["result", "legacy true true"])
            let token = try #require(fetched.get())
            #expect(token != connection.webAuthToken)

            var service = connection
            service.webAuthToken = token
            let webService = CKContainer(identifier: CloudKitServer.containerID, connection: service)
            #expect(try await webService.userRecordID() == (try await app.userRecordID()))
            #expect(try await app.accountStatus() == .available)
        }
    }

    @Test func anotherAPITokenOrNoSignedInUserIsNotAuthenticated() async throws {
        try await CloudKitServer.with { server in
            for (container, apiToken) in [
                (try await server.container(user: "ada"), "not-this-containers-token"),
                (try await server.container(user: nil), server.apiToken),
            ] {
                let failure = Locked<CKError.Code?>(nil)
                let operation = CKFetchWebAuthTokenOperation(apiToken: apiToken)
                operation.database = container.privateCloudDatabase
                operation.fetchWebAuthTokenResultBlock = { result in
                    if case .failure(let error as CKError) = result { failure.set(error.code) }
                }
                container.add(operation)
                try await finished(operation)
                #expect(failure.get() == .notAuthenticated)
            }
        }
    }
}
