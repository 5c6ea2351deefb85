import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

@Suite("Authentication and isolation")
struct AuthTests {
    @Test(arguments: Engine.available) func missingAuthIsAuthenticationRequired(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            var client = server.anonymous()
            client.apiToken = nil
            let reply = try await client.post("records/lookup", ["records": []], scope: "public")
            #expect(reply.status == 421)
            #expect(reply.serverErrorCode == "AUTHENTICATION_REQUIRED")
            #expect(reply["uuid"]?.string?.isEmpty == false)
            #expect(reply["reason"]?.string?.isEmpty == false)
        }
    }

    @Test(arguments: Engine.available) func wrongOrRevokedTokensAreAuthenticationFailed(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            var alice = try await server.user("alice")
            let good = alice
            alice.apiToken = "nope"
            #expect(try await alice.get("zones/list").serverErrorCode == "AUTHENTICATION_FAILED")
            #expect(try await alice.get("zones/list").status == 401)
            alice = good
            alice.webAuthToken = "nope"
            #expect(try await alice.get("zones/list").serverErrorCode == "AUTHENTICATION_FAILED")
            // Revoked while the server runs: refused on the next request.
            #expect(try await good.get("zones/list").status == 200)
            #expect(try await server.server.store.revokeToken(good.webAuthToken!))
            #expect(try await good.get("zones/list").serverErrorCode == "AUTHENTICATION_FAILED")
        }
    }

    @Test(arguments: Engine.available) func privateDatabaseNeedsAUser(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let anonymous = server.anonymous()
            let reply = try await anonymous.get("zones/list")
            #expect(reply.status == 421)
            #expect(reply.serverErrorCode == "AUTHENTICATION_REQUIRED")
        }
    }

    @Test(arguments: Engine.available) func aUserNeverReachesAnotherUsersPrivateDatabase(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            _ = try await alice.createZone("Secret")
            _ = try await alice.modify("Secret", [op("create", "diary", fields: ["text": "private"])])

            // Bob names Alice's zone and owner explicitly.
            let aliceZone: JSON = ["zoneName": "Secret", "ownerRecordName": .string(alice.userRecordName!)]
            let lookup = try await bob.post("records/lookup", ["zoneID": aliceZone, "records": [["recordName": "diary"]]])
            #expect(lookup.status == 403)
            #expect(lookup.serverErrorCode == "ACCESS_DENIED")
            let write = try await bob.post(
                "records/modify", ["zoneID": aliceZone, "operations": [op("forceUpdate", "diary", fields: ["text": "hacked"])]])
            #expect(write.serverErrorCode == "ACCESS_DENIED")
            // Without the owner, the same names address Bob's own database.
            let own = try await bob.post(
                "records/lookup", ["zoneID": ["zoneName": "Secret"], "records": [["recordName": "diary"]]])
            #expect(own.serverErrorCode == "ZONE_NOT_FOUND")
            let aliceView = try await alice.post(
                "records/lookup", ["zoneID": ["zoneName": "Secret"], "records": [["recordName": "diary"]]])
            #expect(aliceView.records.first?["fields"]?["text"]?["value"] == "private")
        }
    }

    @Test(arguments: Engine.available) func userRecordNamesDifferBetweenContainers(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let store = server.server.store
            _ = try await store.createContainer("iCloud.com.example.other")
            let first = try await store.createUser(
                name: "carol", email: nil, firstName: nil, lastName: nil, container: TestServer.container)
            let second = try await store.createUser(
                name: "carol", email: nil, firstName: nil, lastName: nil, container: "iCloud.com.example.other")
            #expect(first.user?.recordName != second.user?.recordName)
            let client = TestClient(
                baseURL: server.server.baseURL, container: TestServer.container, apiToken: server.apiToken,
                webAuthToken: first.token)
            #expect(try await client.get("users/current")["userRecordName"]?.string == first.user?.recordName)
            #expect(try await client.post("users/caller", [:])["userRecordName"]?.string == first.user?.recordName)
            // A web auth token of one container does not open another.
            var crossed = client
            crossed.webAuthToken = second.token
            #expect(try await crossed.get("users/current").serverErrorCode == "AUTHENTICATION_FAILED")
        }
    }

    @Test(arguments: Engine.available) func publicDatabaseIsReadableByAnyoneAndWritableByTheCreator(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let created = try await alice.modify("_defaultZone", [op("create", "article", fields: ["order": 1])], scope: "public")
            let tag = try #require(created.records.first?["recordChangeTag"]?.string)
            let anonymousRead = try await server.anonymous().post(
                "records/lookup", ["records": [["recordName": "article"]]], scope: "public")
            #expect(anonymousRead.records.first?["fields"]?["order"]?["value"] == 1)
            let anonymousWrite = try await server.anonymous().modify("_defaultZone", [op("create", "x")], scope: "public")
            #expect(anonymousWrite.serverErrorCode == "AUTHENTICATION_REQUIRED")
            let bobWrite = try await bob.modify(
                "_defaultZone", [op("update", "article", fields: ["order": 2], tag: tag)], scope: "public")
            #expect(bobWrite.records.first?["serverErrorCode"] == "ACCESS_DENIED")
            let aliceWrite = try await alice.modify(
                "_defaultZone", [op("update", "article", fields: ["order": 2], tag: tag)], scope: "public")
            #expect(aliceWrite.records.first?["fields"]?["order"]?["value"] == 2)
            let zone = try await alice.createZone("NotHere")
            #expect(zone.status == 200)  // private: fine
            let publicZone = try await alice.post(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Z"]]]]],
                scope: "public")
            #expect(publicZone.serverErrorCode == "BAD_REQUEST")
        }
    }

    @Test(arguments: Engine.available) func serverToServerKeysSignDateBodyHashAndPath(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let key = P256.Signing.PrivateKey()
            let keyID = "test-key-1"
            try await server.server.store.addServerKey(
                keyID: keyID, container: TestServer.container, publicKeyPEM: key.publicKey.pemRepresentation)
            let path = "/database/1/\(TestServer.container)/development/public/records/modify"
            // Pretty-printed body: the hash covers the bytes exactly as sent.
            let body = """
                {
                  "operations" : [ { "operationType" : "create",
                    "record" : { "recordName" : "s2s", "recordType" : "Article", "fields" : { "n" : { "value" : 1 } } } } ]
                }
                """

            func signedRequest(date: Date, body: String, signWith signingKey: P256.Signing.PrivateKey = key) throws
                -> HTTPClientRequest
            {
                let formatter = ISO8601DateFormatter()
                let dateText = formatter.string(from: date)
                let hash = Data(SHA256.hash(data: Data(body.utf8))).base64EncodedString()
                let signature = try signingKey.signature(for: Data("\(dateText):\(hash):\(path)".utf8))
                var request = HTTPClientRequest(url: server.server.baseURL + path)
                request.method = .POST
                request.headers.add(name: "X-Apple-CloudKit-Request-KeyID", value: keyID)
                request.headers.add(name: "X-Apple-CloudKit-Request-ISO8601Date", value: dateText)
                request.headers.add(
                    name: "X-Apple-CloudKit-Request-SignatureV1", value: signature.derRepresentation.base64EncodedString())
                request.headers.add(name: "Content-Type", value: "text/plain")
                request.body = .bytes(ByteBuffer(string: body))
                return request
            }
            func send(_ request: HTTPClientRequest) async throws -> (Int, JSON) {
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
                let buffer = try await response.body.collect(upTo: 1 << 20)
                return (Int(response.status.code), try JSON.parse(Array(buffer.readableBytesView)))
            }

            let (status, json) = try await send(try signedRequest(date: Date(), body: body))
            #expect(status == 200)
            #expect(json["records"]?.array?.first?["recordName"] == "s2s")

            let (staleStatus, staleJSON) = try await send(try signedRequest(date: Date().addingTimeInterval(-3600), body: body))
            #expect(staleStatus == 401)
            #expect(staleJSON["serverErrorCode"] == "AUTHENTICATION_FAILED")

            var tampered = try signedRequest(date: Date(), body: body)
            tampered.body = .bytes(ByteBuffer(string: body.replacingOccurrences(of: "s2s", with: "s3s")))
            #expect(try await send(tampered).0 == 401)

            let (otherKeyStatus, _) = try await send(try signedRequest(date: Date(), body: body, signWith: P256.Signing.PrivateKey()))
            #expect(otherKeyStatus == 401)
        }
    }
}
