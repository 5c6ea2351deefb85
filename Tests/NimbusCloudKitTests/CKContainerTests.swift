import Foundation
import NimbusCloudKit
import NimbusTestSupport
import Testing

@Suite("CKContainer and configuration")
struct CKContainerTests {
    @Test func theEnvironmentConfiguresTheServerTheUserAndTheDefaultContainer() throws {
        let connection = try #require(NimbusConnection.fromEnvironment([
            "NIMBUS_URL": "https://sync.example.com", "NIMBUS_API_TOKEN": "api", "NIMBUS_WEB_AUTH_TOKEN": "user",
            "NIMBUS_CONTAINER": "iCloud.com.example.notes", "NIMBUS_ENVIRONMENT": "production",
        ]))
        #expect(connection.serverURL.absoluteString == "https://sync.example.com")
        #expect(connection.apiToken == "api")
        #expect(connection.webAuthToken == "user")
        #expect(connection.defaultContainerIdentifier == "iCloud.com.example.notes")
        #expect(connection.environment == .production)
        #expect(NimbusConnection.fromEnvironment(["NIMBUS_URL": "https://sync.example.com"]) == nil)
        #expect(NimbusConnection.fromEnvironment(["NIMBUS_API_TOKEN": "api", "NIMBUS_URL": "not a url"]) == nil)
        #expect(NimbusConnection.fromEnvironment(["NIMBUS_URL": "https://a.example", "NIMBUS_API_TOKEN": "t"])?.webAuthToken == nil)
    }

    @Test func withoutAServerEveryRequestIsBadContainer() async throws {
        let container = CKContainer(identifier: "iCloud.none", connection: nil)
        do {
            _ = try await container.privateCloudDatabase.allRecordZones()
            Issue.record("a request ran without a server")
        } catch let error as CKError {
            #expect(error.code == .badContainer)
            #expect(error.localizedDescription.contains("NIMBUS_URL"))
        }
    }

    @Test func accountStatusIsNoAccountWithoutAUserAndAvailableWithOne() async throws {
        try await CloudKitServer.with { server in
            let anonymous = try await server.container(user: nil)
            #expect(try await anonymous.accountStatus() == .noAccount)
            let ada = try await server.container(user: "ada")
            #expect(try await ada.accountStatus() == .available)
            let id = try await ada.userRecordID()
            #expect(!id.recordName.isEmpty)
            #expect(ada.database(with: .private) === ada.privateCloudDatabase)
            #expect(ada.database(with: .shared).databaseScope == .shared)

            var revoked = try await server.connection(user: nil)
            revoked.webAuthToken = "not-a-token"
            let stranger = CKContainer(identifier: CloudKitServer.containerID, connection: revoked)
            #expect(try await stranger.accountStatus() == .noAccount)
        }
    }
}
