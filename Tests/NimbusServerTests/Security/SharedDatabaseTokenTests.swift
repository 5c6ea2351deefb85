import Foundation
import NimbusProtocol
import NimbusServer
import NimbusTestSupport
import Testing

/// The shared database's `changes/database` token is signed and bound to its user like every
/// other token: another user's, another environment's or an altered one is BAD_REQUEST.
@Suite("Security: shared database tokens")
struct SharedDatabaseTokenTests {
    /// Alice shares her album with bob and carol, who both accept.
    static func sharedWithBobAndCarol(_ server: TestServer) async throws -> (alice: TestClient, bob: TestClient, carol: TestClient) {
        let alice = try await server.user("alice")
        let bob = try await server.user("bob")
        let carol = try await server.user("carol")
        try await SharingTests.album(alice)
        let guid = try await SharingTests.shareAlbum(
            alice, participants: [(try #require(bob.userRecordName), "READ_WRITE"), (try #require(carol.userRecordName), "READ_ONLY")])
        #expect(try await bob.accept(guid).status == 200)
        #expect(try await carol.accept(guid).status == 200)
        return (alice, bob, carol)
    }

    @Test(arguments: Engine.available)
    func anotherUsersTokenIsRefused(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let (_, bob, carol) = try await Self.sharedWithBobAndCarol(server)
            let bobs = try #require(try await bob.databaseChanges()["syncToken"]?.string)
            let refused = try await carol.databaseChanges(since: bobs)
            #expect(refused.status == 400 && refused.serverErrorCode == "BAD_REQUEST", "\(refused.text)")
            #expect(refused["reason"]?.string?.contains("another database or user") == true, "\(refused.text)")
            // In another environment the same user's token is another feed's too.
            var production = bob
            production.environment = "production"
            let elsewhere = try await production.databaseChanges(since: bobs)
            #expect(elsewhere.serverErrorCode == "BAD_REQUEST" || elsewhere.status == 401, "\(elsewhere.text)")
            let own = try await bob.databaseChanges(since: bobs)
            #expect(own.status == 200 && own.zones.isEmpty, "\(own.text)")
        }
    }

    /// A token with a zone added (or a version changed) by hand: the signature no longer
    /// matches, whatever was changed.
    @Test(arguments: Engine.available)
    func anAlteredTokenIsRefused(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let (_, bob, _) = try await Self.sharedWithBobAndCarol(server)
            let token = try #require(try await bob.databaseChanges()["syncToken"]?.string)
            var bytes = try ChangeTokenSecurityTests.bytes(ofToken: token)
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.hasPrefix("s2:"), "a signed shared database token")
            #expect(text.contains("Albums"), "it carries the zones")
            // Add a zone to the payload (just before the closing bracket, ahead of the MAC).
            let payloadEnd = try #require(bytes.lastIndex(of: UInt8(ascii: "]")))
            bytes.insert(contentsOf: Array(#",["someone","Secret",1,1]"#.utf8), at: payloadEnd)
            let added = try await bob.databaseChanges(since: ChangeTokenSecurityTests.base64url(bytes))
            #expect(added.serverErrorCode == "BAD_REQUEST", "\(added.text)")
            #expect(added["reason"]?.string?.contains("altered") == true, "\(added.text)")
            var flipped = try ChangeTokenSecurityTests.bytes(ofToken: token)
            flipped[flipped.count - 20] ^= 0x01
            #expect(try await bob.databaseChanges(since: ChangeTokenSecurityTests.base64url(flipped)).serverErrorCode == "BAD_REQUEST")
            #expect(try await bob.databaseChanges(since: token).status == 200)
        }
    }

    /// Tokens of the unsigned format earlier releases handed out (base64 of a JSON list)
    /// expire, so the clients that hold one fetch from scratch once.
    @Test func unsignedTokensOfEarlierReleasesExpire() async throws {
        try await TestServer.with { server in
            let (alice, bob, _) = try await Self.sharedWithBobAndCarol(server)
            let owner = try #require(alice.userRecordName)
            let unsigned = Data(#"[["\#(owner)","Albums",1,1]]"#.utf8).base64EncodedString()
            let reply = try await bob.databaseChanges(since: unsigned)
            #expect(reply.serverErrorCode == "CHANGE_TOKEN_EXPIRED", "\(reply.text)")
            let fresh = try await bob.databaseChanges()
            #expect(fresh.zones.map { $0["zoneID"]?["zoneName"]?.string } == ["Albums"], "\(fresh.text)")
        }
    }
}
