import Foundation
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// CORS on the URLs that name their container only through a token (the asset URLs and the
/// web courier), with the requests CloudKit JS sends to them: an `XMLHttpRequest` `POST` of
/// the `File` (its own `Content-Type`, so a preflight first), a plain `GET` of the
/// `webcourierURL`, and a `GET` of a download URL. Only the allowed origins of the container
/// the token belongs to may read the answers.
extension CrossOriginTests {
    static let app = "https://app.example"
    /// Allowed by another container, not by the token's.
    static let otherContainers = "https://other.example"

    /// The test container allows ``app``; another container allows ``otherContainers``.
    func allowOrigins(_ server: TestServer) async throws {
        try await server.enablePasswords(origins: [Self.app])
        _ = try await server.server.store.createContainer("iCloud.com.example.other")
        try await server.server.store.setSignInSettings(
            ContainerSignInSettings(passwords: true, redirectOrigins: [Self.otherContainers]),
            container: "iCloud.com.example.other")
    }

    func origin(_ origin: String?) -> [(String, String)] { origin.map { [("Origin", $0)] } ?? [] }

    /// `(Access-Control-Allow-Origin, Vary)` of an answer.
    func cors(_ reply: RawReply) -> ([String], [String]) {
        (reply.headers["Access-Control-Allow-Origin"], reply.headers["Vary"])
    }

    /// A GET of `url` from another container's origin or any other is answered (200) without
    /// `Access-Control-Allow-Origin`; one without `Origin` gets no CORS header at all.
    func expectUnreadableElsewhere(_ client: TestClient, _ url: String) async throws {
        for refused in [Self.otherContainers, "https://evil.example"] {
            let other = try await client.transfer(url, method: .GET, headers: origin(refused))
            #expect(other.status == 200, "\(refused)")
            #expect(other.headers["Access-Control-Allow-Origin"].isEmpty, "\(refused)")
        }
        #expect(cors(try await client.transfer(url, method: .GET)) == ([], []))
    }

    @Test(arguments: Engine.available) func uploadURLsAnswerTheContainersOriginsOnly(engine: Engine) async throws {
        try await TestServer.withSignIn(engine, outbox: MailOutbox()) { server in
            try await allowOrigins(server)
            let alice = try await server.user("alice")
            let preflight: [(String, String)] = [
                ("Access-Control-Request-Method", "POST"), ("Access-Control-Request-Headers", "content-type"),
            ]

            // The preflight of cloudkit.js's POST of a JPEG file, then the POST itself.
            let allowedURL = try #require(try await alice.requestUpload(record: "r1", field: "image").url)
            let asked = try await alice.transfer(allowedURL, method: .OPTIONS, headers: origin(Self.app) + preflight)
            #expect(asked.status == 204)
            #expect(cors(asked) == ([Self.app], ["Origin"]))
            #expect(asked.headers["Access-Control-Allow-Methods"] == ["POST"])
            #expect(asked.headers["Access-Control-Allow-Headers"] == ["Content-Type"])
            let posted = try await alice.transfer(
                allowedURL, bytes: testBytes(2000), headers: origin(Self.app) + [("Content-Type", "image/jpeg")])
            #expect(posted.status == 200)
            #expect(posted.json["singleFile"]?["receipt"]?.string != nil)
            #expect(cors(posted) == ([Self.app], ["Origin"]))
            // The upload's status (Nimbus's extension: the singleFile again until it is saved) too.
            let status = try await alice.transfer(allowedURL, method: .GET, headers: origin(Self.app))
            #expect(status.json["singleFile"] == posted.json["singleFile"])
            #expect(cors(status) == ([Self.app], ["Origin"]))

            // Another container's origin, any other origin: the preflight grants nothing, and
            // an upload sent anyway is stored but its answer is not readable by the page.
            for refused in [Self.otherContainers, "https://evil.example", "http://app.example", "null"] {
                let url = try #require(try await alice.requestUpload(record: "r-\(refused.count)", field: "image").url)
                let refusedAsk = try await alice.transfer(url, method: .OPTIONS, headers: origin(refused) + preflight)
                #expect(refusedAsk.headers["Access-Control-Allow-Origin"].isEmpty, "\(refused)")
                #expect(refusedAsk.headers["Access-Control-Allow-Methods"].isEmpty, "\(refused)")
                let sent = try await alice.transfer(
                    url, bytes: testBytes(10), headers: origin(refused) + [("Content-Type", "image/jpeg")])
                #expect(sent.status == 200, "\(refused)")
                #expect(sent.headers["Access-Control-Allow-Origin"].isEmpty, "\(refused)")
            }
            // No Origin: nothing added. A token this server never issued names no container.
            let plainURL = try #require(try await alice.requestUpload(record: "r2", field: "image").url)
            let plain = try await alice.transfer(plainURL, bytes: testBytes(10), headers: [("Content-Type", "image/jpeg")])
            #expect(plain.status == 200)
            #expect(cors(plain) == ([], []))
            let forged = try await alice.transfer(
                "\(server.server.baseURL)/assets/1/upload/bm90LmEudG9rZW4.AAAAAAAAAAAAAAAAAAAAAA", method: .OPTIONS,
                headers: origin(Self.app) + preflight)
            #expect(cors(forged) == ([], []))
        }
    }

    @Test(arguments: Engine.available) func downloadURLsAnswerTheContainersOriginsOnly(engine: Engine) async throws {
        try await TestServer.withSignIn(engine, outbox: MailOutbox()) { server in
            try await allowOrigins(server)
            let alice = try await server.user("alice")
            let singleFile = try await alice.uploadAsset(testBytes(3000), record: "r1", field: "image")
            let saved = try await alice.modify("_defaultZone", [assetOp("create", "r1", ["image": (singleFile, "ASSETID")])])
            let download = try #require(saved.records.first?["fields"]?["image"]?["value"]?["downloadURL"]?.string)
                .replacingOccurrences(of: "${f}", with: "cat.jpg")

            let allowed = try await alice.transfer(download, method: .GET, headers: origin(Self.app))
            #expect(allowed.status == 200)
            #expect(allowed.bytes == testBytes(3000))
            #expect(cors(allowed) == ([Self.app], ["Origin"]))
            try await expectUnreadableElsewhere(alice, download)
        }
    }

    @Test(arguments: Engine.available) func theWebCourierAnswersTheContainersOriginsOnly(engine: Engine) async throws {
        try await TestServer.withSignIn(
            engine, outbox: MailOutbox(), configure: { $0.push.courierTimeout = .milliseconds(100) }
        ) { server in
            try await allowOrigins(server)
            let alice = try await server.user("alice")
            // As CloudKit JS registers: tokens/create under /device/1/, then polls the URL.
            let created = try await alice.send(
                "\(alice.baseURL)/device/1/\(alice.container)/development/tokens/create"
                    + "?ckAPIToken=\(alice.apiToken!)&ckWebAuthToken=\(alice.webAuthToken!)",
                method: .POST, body: JSON.object(["apnsEnvironment": "development"]).serializedBytes(),
                headers: origin(Self.app))
            let courier = try #require(created["webcourierURL"]?.string)

            let allowed = try await alice.transfer(courier, method: .GET, headers: origin(Self.app))
            #expect(allowed.status == 200)
            #expect(cors(allowed) == ([Self.app], ["Origin"]))
            try await expectUnreadableElsewhere(alice, courier)
            // A token nobody was given names no container.
            let unknown = try await alice.transfer(
                "\(alice.baseURL)/webcourier/\(String(repeating: "0", count: 48))", method: .GET, headers: origin(Self.app))
            #expect(unknown.status == 404)
            #expect(cors(unknown) == ([], []))
        }
    }
}
