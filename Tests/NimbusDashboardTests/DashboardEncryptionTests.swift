import Foundation
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// The operator sees that a field is encrypted and its size, never its bytes.
@Suite("Dashboard and encrypted fields")
struct DashboardEncryptionTests {
    @Test("an encrypted field shows as encrypted with its size, never its bytes", arguments: Engine.available)
    func encryptedFieldsAreNotShown(engine: Engine) async throws {
        try await DashboardServer.with(engine) { server, browser in
            let token = try await server.userToken("alice")
            let alice = try #require(try await server.server.store.user(named: "alice", container: DashboardServer.container))
            let envelope = Data([1] + (0..<60).map { UInt8($0) })
            let sealed = envelope.base64EncodedString()
            _ = try await server.api(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Album"]]]]],
                webAuthToken: token, scope: "private")
            let photo: JSON = [
                "recordName": "p1", "recordType": "Photo",
                "fields": ["caption": ["value": .string(sealed), "type": "ENCRYPTED_BYTES"], "title": ["value": "Holiday"]],
            ]
            let body: JSON = ["zoneID": ["zoneName": "Album"], "operations": [["operationType": "create", "record": photo]]]
            let saved = try await server.api("records/modify", body, webAuthToken: token, scope: "private")
            #expect(saved["records"]?.array?.first?["serverErrorCode"] == nil, "\(saved)")
            try await browser.signIn()
            let user = try await browser.get("/dashboard/user?c=\(DashboardServer.container)&u=\(alice.recordName)")
            let csrf = try #require(Browser.hidden("csrf", in: user.body))
            _ = try await browser.post("/dashboard/container/private-access", ["csrf": csrf, "c": DashboardServer.container, "allowed": "on"])

            let page = try await browser.get("/dashboard/record?c=\(DashboardServer.container)&u=\(alice.recordName)&zone=Album&record=p1")
            #expect(page.status == 200, "\(page.body)")
            #expect(page.body.contains("encrypted (\(envelope.count) bytes)"))
            #expect(page.body.contains("Holiday"))
            #expect(!page.body.contains(sealed))
            #expect(!page.body.contains(String(sealed.prefix(16))))

            let query = try await browser.get(
                "/dashboard/query?c=\(DashboardServer.container)&u=\(alice.recordName)&zone=Album&recordType=Photo")
            #expect(query.body.contains("encrypted (\(envelope.count) bytes)"), "\(query.body)")
            #expect(!query.body.contains(String(sealed.prefix(16))))
        }
    }
}
