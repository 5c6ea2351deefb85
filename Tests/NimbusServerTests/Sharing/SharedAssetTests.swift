import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Assets in shared zones: a read-write participant uploads a file to the owner's zone,
/// the owner downloads it, and the bytes count against the owner.
@Suite("Sharing: assets")
struct SharedAssetTests {
    @Test(arguments: Engine.available) func aParticipantsPhotoIsTheOwnersToRead(engine: Engine) async throws {
        try await AssetLifecycleTests.withServer(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let carol = try await server.user("carol")
            let owner = try #require(alice.userRecordName)
            try await SharingTests.album(alice)
            let guid = try await SharingTests.shareAlbum(
                alice, participants: [(try #require(bob.userRecordName), "READ_WRITE"), (try #require(carol.userRecordName), "READ_ONLY")])
            _ = try await bob.accept(guid)
            _ = try await carol.accept(guid)
            let zone: JSON = ["zoneName": "Albums", "ownerRecordName": .string(owner)]
            func upload(_ client: TestClient) async throws -> TestClient.Reply {
                try await client.post(
                    "assets/upload",
                    ["zoneID": zone, "tokens": [["recordName": "photo-9", "recordType": "Photo", "fieldName": "image"]]],
                    scope: "shared")
            }
            #expect(try await upload(carol).serverErrorCode == "ACCESS_DENIED")
            let slot = try await upload(bob)
            let url = try #require(slot["tokens"]?.array?.first?["url"]?.string, "\(slot.text)")
            let bytes = testBytes(30_000, seed: 4)
            let sent = try await bob.transfer(url, bytes: bytes)
            let file = try #require(sent.json["singleFile"], "\(sent.status)")
            var photo = sharingOp("create", "photo-9", fields: ["caption": "Lighthouse"], parent: "album")
            if case .object(var operation) = photo, case .object(var record)? = operation["record"],
                case .object(var fields)? = record["fields"]
            {
                fields["image"] = ["value": file, "type": "ASSETID"]
                record["fields"] = .object(fields)
                operation["record"] = .object(record)
                photo = .object(operation)
            }
            let saved = try await bob.sharedModify("Albums", owner: owner, [photo])
            #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.text)")

            let read = try await alice.lookup("photo-9", zone: "Albums")
            let download = try #require(read.records.first?["fields"]?["image"]?["value"]?["downloadURL"]?.string, "\(read.text)")
            #expect(try await alice.transfer(download, method: .GET).bytes == bytes)
            let carolsView = try await carol.sharedLookup("Albums", owner: owner, ["photo-9"])
            let carolsURL = try #require(carolsView.records.first?["fields"]?["image"]?["value"]?["downloadURL"]?.string)
            #expect(try await carol.transfer(carolsURL, method: .GET).bytes == bytes)
            let usage = try await server.server.store.usage(of: AssetLifecycleTests.database(alice))
            #expect(usage.assetBytes == 30_000, "the owner's database holds the participant's upload")
        }
    }
}
