import Crypto
import Foundation
import NIOHTTP1
import NimbusEngines
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// The server reads the time of day only from ``ServerConfiguration/clock``: records' stamps,
/// what the store stamps, the signature window, compaction and push cursors all follow an
/// injected ``ManualWallClock``, so tests move time instead of waiting for it.
@Suite("The server's clock")
struct ClockTests {
    /// 2001-09-09T01:46:40Z: data stamped by the system clock cannot be mistaken for it.
    static let past: Int64 = 1_000_000_000_000
    /// 2096-10-02T07:06:40Z: no system clock reaches it while the tests run, so a tombstone
    /// stamped then is compacted only by a clock that was moved past its retention.
    static let future: Int64 = 4_000_000_000_000
    static let month: Duration = .seconds(30 * 24 * 3600)

    static func integer(_ query: String, _ server: TestServer) async throws -> Int64? {
        try await StoredRows.integer(query, on: server.storage)
    }

    /// Runs `body` with a fresh server whose clock reads `millis` until the test moves it, and
    /// Alice signed in with a zone Z.
    static func withServer(
        _ engine: Engine, at millis: Int64, _ body: (TestServer, TestClient, ManualWallClock) async throws -> Void
    ) async throws {
        let clock = ManualWallClock(millis: millis)
        try await TestServer.with(engine, configure: { $0.clock = clock.wallClock }) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            try await body(server, alice, clock)
        }
    }

    @Test(arguments: Engine.available)
    func recordsZonesAndProvisioningAreStampedByTheServersClock(engine: Engine) async throws {
        try await Self.withServer(engine, at: Self.past) { server, alice, clock in
            #expect(try await Self.integer("SELECT created_at FROM containers", server) == Self.past)
            let created = try await alice.modify("Z", [op("create", "a")])
            #expect(created.records.first?["created"]?["timestamp"]?.int64 == Self.past, "\(created.text)")
            #expect(created.records.first?["modified"]?["timestamp"]?.int64 == Self.past)

            clock.advance(by: .seconds(5))
            let updated = try await alice.modify("Z", [op("forceUpdate", "a", fields: ["n": 1])])
            #expect(updated.records.first?["created"]?["timestamp"]?.int64 == Self.past)
            #expect(updated.records.first?["modified"]?["timestamp"]?.int64 == Self.past + 5_000)

            clock.advance(by: .seconds(5))
            _ = try await alice.post(
                "zones/modify", ["operations": [["operationType": "delete", "zone": ["zoneID": ["zoneName": "Z"]]]]])
            #expect(try await Self.integer("SELECT deleted_at FROM zones WHERE name = 'Z'", server) == Self.past + 10_000)

            clock.advance(by: .seconds(5))
            #expect(try await server.server.store.revokeToken(alice.webAuthToken ?? ""))
            // A web auth token is a session, stored by the SHA-256 of its token.
            let revokedAt = try await Self.integer(
                "SELECT revoked_at FROM sessions WHERE token_hash = '\(SessionToken.hash(alice.webAuthToken ?? ""))'",
                server)
            #expect(revokedAt == Self.past + 15_000)
        }
    }

    @Test(arguments: Engine.available)
    func aSignedRequestMustBeDatedNearTheServersClock(engine: Engine) async throws {
        let clock = ManualWallClock(millis: Self.past)
        try await TestServer.with(engine, configure: { $0.clock = clock.wallClock }) { server in
            let signer = SignedRequestTests.Signer()
            try await server.server.store.addServerKey(
                keyID: signer.keyID, container: TestServer.container, publicKeyPEM: signer.key.publicKey.pemRepresentation)
            let path = SignedRequestTests.path("zones/list")
            func status(dated date: Date) async throws -> Int {
                let headers = try signer.headers(path: path, bodyHashField: "", date: date)
                return try await SignedRequestTests.send(server, path, method: .GET, body: nil, headers: headers).status
            }
            let serverNow = clock.wallClock.now()
            // The default window is 600 s either side of the server's clock, not the system's.
            #expect(try await status(dated: serverNow) == 200)
            #expect(try await status(dated: serverNow.addingTimeInterval(-599)) == 200)
            #expect(try await status(dated: serverNow.addingTimeInterval(599)) == 200)
            #expect(try await status(dated: serverNow.addingTimeInterval(601)) == 401)
            #expect(try await status(dated: Date()) == 401, "the system's time is decades away from the server's")

            // An hour later by the server's clock, the same date is stale.
            clock.advance(by: .seconds(3600))
            #expect(try await status(dated: serverNow) == 401)
            #expect(try await status(dated: clock.wallClock.now()) == 200)
        }
    }

    @Test(arguments: Engine.available)
    func compactingNowMeasuresTheRetentionByTheServersClock(engine: Engine) async throws {
        try await Self.withServer(engine, at: Self.future) { server, alice, clock in
            _ = try await alice.modify("Z", [op("create", "a"), op("create", "b")])
            let token = try #require(try await alice.changes("Z")["syncToken"]?.string)
            _ = try await alice.modify("Z", [op("forceDelete", "a")])

            #expect(try await server.server.compactNow() == CompactionReport(tombstonesRemoved: 0, zonesRemoved: 0))
            #expect(try await alice.changes("Z", since: token).status == 200)

            clock.advance(by: Self.month)
            #expect(try await server.server.compactNow() == CompactionReport(tombstonesRemoved: 1, zonesRemoved: 0))
            let expired = try await alice.changes("Z", since: token)
            #expect(expired.status == 410)
            #expect(expired.serverErrorCode == "CHANGE_TOKEN_EXPIRED")
        }
    }

    @Test(arguments: Engine.available)
    func theCompactorRunsOnTheServersClock(engine: Engine) async throws {
        let clock = ManualWallClock(millis: Self.future)
        let log = LogCapture()
        let configure = { (configuration: inout ServerConfiguration) in
            configuration.compactionInterval = .milliseconds(20)
            configuration.clock = clock.wallClock
        }
        try await TestServer.with(engine, configure: configure, logger: log.logger) { server in
            let alice = DatabaseKey(container: TestServer.container, environment: .development, scope: .private, owner: "_alice")
            let caller = Caller(userRecordName: "_alice")
            func write(_ type: RecordOperationType) async throws {
                _ = try await server.server.store.modifyRecords(
                    [RecordOperation(type: type, record: Record(recordName: "a", recordType: "Item"))], zone: "_defaultZone",
                    atomic: true, policy: WritePolicy(creatorOnlyWrites: false, now: clock.nowMillis), caller: caller, in: alice)
            }
            try await write(.create)
            try await write(.forceDelete)
            // The tombstone is from 2096; only the server's clock, moved a month on, makes it old.
            clock.advance(by: Self.month)
            // A pass every 20 ms; the bound is for a loaded machine (PostgreSQL beside the whole suite).
            let message = try await log.first(timeout: .seconds(60)) { $0.contains("compacted") }
            #expect(message.contains("compacted 1 tombstones"), "\(message)")
        }
    }

    @Test(arguments: Engine.available)
    func pushTokensAndDeviceCursorsCarryTheServersTime(engine: Engine) async throws {
        try await Self.withServer(engine, at: Self.past) { server, alice, clock in
            _ = try await alice.subscribe(zoneSubscription("z", zone: "Z"))

            // tokens/create and tokens/register.
            let tokens = "\(alice.baseURL)/database/1/\(alice.container)/development/tokens/"
            let credentials = "?ckAPIToken=\(alice.apiToken ?? "")&ckWebAuthToken=\(alice.webAuthToken ?? "")"
            let created = try await alice.send(
                tokens + "create" + credentials, method: .POST,
                body: JSON.object(["apnsEnvironment": "development"]).serializedBytes(), headers: [])
            let token = try #require(created["apnsToken"]?.string, "\(created.text)")
            let courier = try #require(created["webcourierURL"]?.string)
            #expect(try await Self.integer("SELECT created_at FROM push_tokens WHERE token = '\(token)'", server) == Self.past)
            clock.advance(by: .seconds(1))
            let registered = try await alice.send(
                tokens + "register" + credentials, method: .POST,
                body: JSON.object(["apnsEnvironment": "development", "apnsToken": .string(token)]).serializedBytes(),
                headers: [])
            #expect(registered.status == 200, "\(registered.text)")
            #expect(
                try await Self.integer("SELECT registered_at FROM push_tokens WHERE token = '\(token)'", server)
                    == Self.past + 1_000)

            // The courier's catch-up moves the token's device cursor at the server's time.
            clock.advance(by: .seconds(1))
            _ = try await alice.onDevice("laptop").modify("Z", [op("create", "a")])
            let push = try await alice.send(courier, method: .GET, body: nil, headers: [])
            #expect(push.status == 200)
            #expect(push["ck"]?["fet"]?["zid"] == "Z", "\(push.text)")
            #expect(try await Self.integer("SELECT last_seen FROM push_devices WHERE device = '\(token)'", server) == Self.past + 2_000)

            // So does a WebSocket device's, before its connection is accepted.
            clock.advance(by: .seconds(1))
            let phone = try await PushTestDevice.connect(alice, deviceID: "phone")
            #expect(try await Self.integer("SELECT last_seen FROM push_devices WHERE device = 'phone'", server) == Self.past + 3_000)
            await phone.disconnect()
        }
    }
}
