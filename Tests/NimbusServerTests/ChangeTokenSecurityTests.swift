import Foundation
import GRDB
import NimbusEngines
import NimbusPostgres
import NimbusProtocol
import NimbusSQLite
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Sync tokens cannot be forged into a state that hides data: they are signed with the
/// server's secret and bound to their database, zone or user; a position the server has not
/// reached (a forged one, or every client's after a restore from a backup) is
/// CHANGE_TOKEN_EXPIRED, so clients refetch.
@Suite("Change token security")
struct ChangeTokenSecurityTests {
    static func privateDatabase(of client: TestClient) -> DatabaseKey {
        DatabaseKey(container: client.container, environment: .development, scope: .private, owner: client.userRecordName!)
    }

    /// base64url of raw bytes, as a client holding a token's bytes would send them.
    static func base64url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func bytes(ofToken token: String) throws -> [UInt8] {
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64.append("=") }
        return Array(try #require(Data(base64Encoded: base64)))
    }

    /// Every feed's token in one place: zone Z's records, the database's zones, zones/changes
    /// and the notification collection.
    struct FeedTokens {
        var records: String
        var database: String
        var meta: String
        var notifications: String
    }

    static func currentTokens(_ client: TestClient, zone: String = "Z") async throws -> FeedTokens {
        FeedTokens(
            records: try #require(try await client.changes(zone)["syncToken"]?.string),
            database: try #require(try await client.post("changes/database", [:])["syncToken"]?.string),
            meta: try #require(try await client.post("zones/changes", [:])["metaSyncToken"]?.string),
            notifications: try #require(try await client.notificationChanges()["syncToken"]?.string))
    }

    /// The error codes of reading each feed since the given tokens (`nil`: 200).
    static func codes(_ client: TestClient, _ tokens: FeedTokens, zone: String = "Z") async throws -> [String?] {
        let zoneFeeds = try await client.post(
            "changes/zone", ["zones": [["zoneID": ["zoneName": .string(zone)], "syncToken": .string(tokens.records)]]])
        return [
            try await client.changes(zone, since: tokens.records).serverErrorCode,
            zoneFeeds.zones.first?["serverErrorCode"]?.string,
            try await client.post("changes/database", ["syncToken": .string(tokens.database)]).serverErrorCode,
            try await client.post("zones/changes", ["metaSyncToken": .string(tokens.meta)]).serverErrorCode,
            try await client.notificationChanges(since: tokens.notifications).serverErrorCode,
        ]
    }

    static let allExpired = Array(repeating: "CHANGE_TOKEN_EXPIRED" as String?, count: 5)
    static let allRefused = Array(repeating: "BAD_REQUEST" as String?, count: 5)
    static let allAccepted = Array(repeating: nil as String?, count: 5)

    /// Alice with zone Z, a record in it and a zone subscription, so every feed has a position.
    static func aliceWithHistory(_ server: TestServer) async throws -> TestClient {
        let alice = try await server.user("alice")
        _ = try await alice.createZone("Z")
        _ = try await alice.subscribe(zoneSubscription("z", zone: "Z"))
        _ = try await alice.modify("Z", [op("create", "a")])
        return alice
    }

    @Test(arguments: Engine.available) func aSignedPositionAheadOfTheServerIsExpired(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await Self.aliceWithHistory(server)
            let current = try await Self.currentTokens(alice)
            #expect(try await Self.codes(alice, current) == Self.allAccepted)

            // Positions signed with the server's own secret, one step past what it has reached.
            let tokens = try server.server.store.changeTokens
            let database = Self.privateDatabase(of: alice)
            let position = try tokens.decodeRecords(current.records, zone: "Z", in: database)
            let version = try tokens.decodeDatabase(current.database, in: database)
            let sequence = try tokens.decodeNotifications(current.notifications, for: alice.recipient)
            let ahead = FeedTokens(
                records: tokens.records(zone: "Z", incarnation: position.incarnation, version: version + 1, floor: position.floor, in: database),
                database: tokens.database(version: version + 1, in: database),
                meta: tokens.meta(version: version + 1, in: database),
                notifications: tokens.notifications(sequence: sequence + 1, for: alice.recipient))
            #expect(try await Self.codes(alice, ahead) == Self.allExpired)
            // A zone incarnation not created yet is ahead too.
            let laterZone = tokens.records(zone: "Z", incarnation: position.incarnation + 1, version: 1, floor: 0, in: database)
            #expect(try await alice.changes("Z", since: laterZone).serverErrorCode == "CHANGE_TOKEN_EXPIRED")
            // The reason tells the client what to do, and the zone is named.
            let reply = try await alice.changes("Z", since: ahead.records)
            #expect(reply.status == 410)
            #expect(reply["reason"]?.string?.contains("fetch again without a sync token") == true)
            #expect(reply["zoneID"]?["zoneName"] == "Z")
        }
    }

    @Test(arguments: Engine.available) func tokensOfTheEarlierUnsignedFormatAreExpired(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await Self.aliceWithHistory(server)
            // Before tokens were signed, a client could write any position; one far ahead was
            // accepted and echoed back, hiding every later write until the database caught up.
            let legacy = FeedTokens(
                records: Self.base64url(Array("r1:0:1000".utf8)), database: Self.base64url(Array("d1:1000".utf8)),
                meta: Self.base64url(Array("m1:1000".utf8)), notifications: Self.base64url(Array("n1:1000".utf8)))
            #expect(try await Self.codes(alice, legacy) == Self.allExpired)
            let current = FeedTokens(
                records: Self.base64url(Array("r1:0:1".utf8)), database: Self.base64url(Array("d1:1".utf8)),
                meta: Self.base64url(Array("m1:1".utf8)), notifications: Self.base64url(Array("n1:1".utf8)))
            #expect(try await Self.codes(alice, current) == Self.allExpired)
        }
    }

    @Test(arguments: Engine.available) func aTokenOfAnotherUsersDatabaseIsRefused(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await Self.aliceWithHistory(server)
            let carol = try await server.user("carol")
            _ = try await carol.createZone("Z")
            let alices = try await Self.currentTokens(alice)
            #expect(try await Self.codes(carol, alices) == Self.allRefused)
            let reply = try await carol.changes("Z", since: alices.records)
            #expect(reply["reason"]?.string?.contains("belongs to another zone or database") == true)
        }
    }

    @Test(arguments: Engine.available) func aTokenOfOneZoneIsRefusedForAnother(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await Self.aliceWithHistory(server)
            _ = try await alice.createZone("Y")
            let token = try #require(try await alice.changes("Z")["syncToken"]?.string)
            let reply = try await alice.changes("Y", since: token)
            #expect(reply.serverErrorCode == "BAD_REQUEST")
            // The zone's own token, as zones/list hands it out, is accepted for it.
            let listed = try await alice.get("zones/list").zones.first { $0["zoneID"]?["zoneName"] == "Y" }
            let zoneToken = try #require(listed?["syncToken"]?.string)
            #expect(try await alice.changes("Y", since: zoneToken).status == 200)
            #expect(try await alice.changes("Z", since: zoneToken).serverErrorCode == "BAD_REQUEST")
            // A feed's token is not another feed's.
            let databaseToken = try #require(try await alice.post("changes/database", [:])["syncToken"]?.string)
            #expect(try await alice.changes("Z", since: databaseToken).serverErrorCode == "BAD_REQUEST")
        }
    }

    @Test(arguments: Engine.available) func aTamperedTokenIsRefused(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await Self.aliceWithHistory(server)
            let token = try #require(try await alice.changes("Z")["syncToken"]?.string)
            let bytes = try Self.bytes(ofToken: token)
            var variants: [String] = ["", "hello", "!!!!", String(repeating: "A", count: 5_000), String(token.dropLast(3))]
            // Every single byte changed, one at a time: the kind, the position, the tag, the
            // signature. (The 8 bytes after "r2:" name the secret: changed, they name one the
            // server does not have, which is CHANGE_TOKEN_EXPIRED — a refetch, hiding nothing.)
            let keyBytes = 3..<11
            for index in bytes.indices where !keyBytes.contains(index) {
                var changed = bytes
                changed[index] ^= 0x01
                variants.append(Self.base64url(changed))
            }
            for variant in variants {
                let reply = try await alice.changes("Z", since: variant)
                #expect(reply.serverErrorCode == "BAD_REQUEST", "\(variant)")
            }
            for index in keyBytes {
                var changed = bytes
                changed[index] ^= 0x01
                let reply = try await alice.changes("Z", since: Self.base64url(changed))
                #expect(reply.serverErrorCode == "CHANGE_TOKEN_EXPIRED")
            }
            #expect(try await alice.changes("Z", since: token).status == 200)
        }
    }

    @Test(arguments: Engine.available) func theSecretSurvivesARestart(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await Self.aliceWithHistory(server)
            let tokens = try await Self.currentTokens(alice)

            try await server.harness.restart()
            _ = try await alice.modify("Z", [op("create", "b")])
            #expect(try await Self.codes(alice, tokens) == Self.allAccepted)
            #expect(try await alice.changes("Z", since: tokens.records).records.map { $0["recordName"] } == ["b"])
        }
    }

    /// What an operator does after restoring a backup (docs/DEPLOYMENT.md): delete the secret.
    /// Every token issued before is then expired, however far the restored databases get.
    @Test func replacingTheSecretExpiresEveryTokenSignedWithTheOldOne() async throws {
        try await TestServer.with(.sqlite) { server in
            guard case .sqlite(let directory) = server.storage else { throw TestFailure("not SQLite storage") }
            let alice = try await Self.aliceWithHistory(server)
            let tokens = try await Self.currentTokens(alice)
            try await server.harness.stopServer()

            let queue = try DatabaseQueue(path: (directory as NSString).appendingPathComponent("nimbus.sqlite"))
            try await queue.write { try $0.execute(sql: "DELETE FROM server_secrets WHERE name = 'change-tokens'") }
            try queue.close()

            try await server.harness.restart()
            #expect(try await Self.codes(alice, tokens) == Self.allExpired)
            let fresh = try await Self.currentTokens(alice)
            #expect(try await Self.codes(alice, fresh) == Self.allAccepted)
        }
    }

    @Test(.enabled(if: Engine.postgresURL != nil, Engine.postgresHowTo))
    func nodesOnOnePostgresDatabaseShareTheSecret() async throws {
        try await TestCluster.with(nodes: 2) { cluster in
            let alice = try await cluster.user("alice", node: 0)
            _ = try await alice.createZone("Z")
            _ = try await alice.subscribe(zoneSubscription("z", zone: "Z"))
            _ = try await alice.modify("Z", [op("create", "a")])
            let tokens = try await Self.currentTokens(alice)
            let elsewhere = cluster.client(alice, node: 1)
            _ = try await elsewhere.modify("Z", [op("create", "b")])
            #expect(try await Self.codes(elsewhere, tokens) == Self.allAccepted)
            #expect(try await elsewhere.changes("Z", since: tokens.records).records.map { $0["recordName"] } == ["b"])
        }
    }

    @Test(.enabled(if: Engine.postgresURL != nil, Engine.postgresHowTo))
    func nodesCreatingTheSecretTogetherAgreeOnOne() async throws {
        let storage = try Engine.postgres.freshStorage()
        guard case .postgres(let url, let schema) = storage else { return }
        do {
            async let first = PostgresStore.open(
                url: url, schema: schema, random: SeededRandom(seed: 1), logger: TestServer.quietLogger)
            async let second = PostgresStore.open(
                url: url, schema: schema, random: SeededRandom(seed: 2), logger: TestServer.quietLogger)
            let stores = try await [first, second]
            let database = DatabaseKey(container: "c", environment: .development, scope: .private, owner: "_a")
            let issued = try stores[0].changeTokens.database(version: 7, in: database)
            #expect(try stores[1].changeTokens.database(version: 7, in: database) == issued)
            #expect(try stores[1].changeTokens.decodeDatabase(issued, in: database) == 7)
            for store in stores { try await store.shutdown() }
        } catch {
            try? await storage.removeAll(logger: TestServer.quietLogger)
            throw error
        }
        try await storage.removeAll(logger: TestServer.quietLogger)
    }

    @Test func theSecretComesFromTheInjectedGeneratorOnceAndIsKept() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-secret-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = DatabaseKey(container: "c", environment: .development, scope: .private, owner: "_a")
        let first = try SQLiteStore(directory: directory, random: SeededRandom(seed: 42))
        let issued = first.changeTokens.database(version: 3, in: database)
        try first.close()
        // Reopened with another generator: the stored secret wins.
        let reopened = try SQLiteStore(directory: directory, random: SeededRandom(seed: 7))
        #expect(reopened.changeTokens.database(version: 3, in: database) == issued)
        try reopened.close()
        // Another file with the same seed signs alike: the generator is the only source.
        let twin = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-secret-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: twin) }
        let same = try SQLiteStore(directory: twin, random: SeededRandom(seed: 42))
        #expect(same.changeTokens.database(version: 3, in: database) == issued)
        try same.close()
    }

    @Test func aRestoreFromABackupExpiresTheTokensIssuedAfterIt() async throws {
        try await TestServer.with(.sqlite) { server in
            guard case .sqlite(let directory) = server.storage else { throw TestFailure("not SQLite storage") }
            let backup = (server.directory as NSString).appendingPathComponent("backup")

            // Time T: alice has zone Z, a subscription and one record; the server stops and its
            // data directory is copied.
            let alice = try await Self.aliceWithHistory(server)
            try await server.harness.stopServer()
            try FileManager.default.copyItem(atPath: directory, toPath: backup)

            // After T: more writes, and a client takes tokens of every feed.
            try await server.harness.restart()
            _ = try await alice.modify("Z", [op("create", "b"), op("create", "c")])
            _ = try await alice.createZone("Y")
            let tokens = try await Self.currentTokens(alice)
            try await server.harness.stopServer()

            // The backup is restored: every token handed out after T is ahead of the server.
            try FileManager.default.removeItem(atPath: directory)
            try FileManager.default.copyItem(atPath: backup, toPath: directory)
            try await server.harness.restart()
            #expect(try await Self.codes(alice, tokens) == Self.allExpired)
            // The client refetches from scratch and sees the restored state.
            #expect(try await alice.changes("Z").records.map { $0["recordName"] } == ["a"])
        }
    }
}

/// The secret's generator in these tests (`SeededRandom` lives with the codec tests).
extension SeededRandom: RandomNumberGenerator {}
