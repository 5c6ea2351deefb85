import Foundation
import Nimbus
import NimbusProtocol
import NimbusSync
import SharedAlbum
import Testing

/// The shared photo album end to end: two users, three devices, a real server, pushes.
@Suite("Shared album", .serialized)
struct SharedAlbumTests {
    @Test func twoUsersShareAnAlbumLiveAcrossThreeDevices() async throws {
        try await AlbumWorld.with { world in
            let (aliceMac, bobPhone, bobLaptop, bobName) = try await world.aliceAndBob()

            // Alice makes an album with a photo and shares it with Bob, read-write.
            let summer = try aliceMac.app.createAlbum(title: "Summer")
            let picture = try world.picture("beach")
            try aliceMac.app.addPhoto(to: summer, file: picture, caption: "Beach")
            try await aliceMac.app.sync()
            let url = try await aliceMac.app.share(summer, with: [.init(userRecordName: bobName, permission: .readWrite)])

            // Bob joins on his phone; his laptop hears of it by push, without a relaunch.
            let joined = try await bobPhone.app.join(url)
            #expect(joined.title == "Summer")
            #expect(joined.canEdit)
            #expect(!joined.isOwned)
            #expect(try bobPhone.app.photos(in: joined).map(\.caption) == ["Beach"])
            try await hearsOfTheAccept(bobLaptop)
            #expect(try bobLaptop.app.albums().contains { $0.title == "Summer" && !$0.isOwned })
            // Alice's device notices the accept while it runs (her share record changed).
            try await waitUntil(aliceMac, "Alice sees Bob accepted") { app in
                try app.album("Summer").participants.contains {
                    $0.userIdentity.userRecordID?.recordName == bobName && $0.acceptanceStatus == .accepted
                }
            }

            // The picture's bytes reach Bob.
            let bobsPhoto = try #require(try bobLaptop.app.photos(in: try bobLaptop.app.album("Summer")).first)
            let file = try #require(try await bobLaptop.app.imageFile(of: bobsPhoto))
            #expect(FileManager.default.contents(atPath: file.path) == FileManager.default.contents(atPath: picture.path))

            // Bob captions it on his phone: Alice and Bob's laptop see it by push.
            try bobPhone.app.setCaption("Beach at dawn", of: try bobPhone.app.photo(bobsPhoto.recordName))
            try await bobPhone.app.engine.sendChanges()
            for device in [aliceMac, bobLaptop] {
                try await waitUntil(device, "the caption from Bob's phone arrived") { app in
                    try app.photo(bobsPhoto.recordName).caption == "Beach at dawn"
                }
            }

            // Bob adds a photo of his own to Alice's album: it lands in her private zone.
            try bobLaptop.app.addPhoto(to: try bobLaptop.app.album("Summer"), file: try world.picture("dunes"), caption: "Dunes")
            try await bobLaptop.app.engine.sendChanges()
            try await waitUntil(aliceMac, "Bob's photo reached Alice") { app in
                try app.photos(in: try app.album("Summer")).map(\.caption).sorted() == ["Beach at dawn", "Dunes"]
            }

            // Alice stops sharing: the album leaves both of Bob's devices, live, and the
            // engine says so.
            let laptopEvents = bobLaptop.app.engine.events()
            try await aliceMac.app.stopSharing(try aliceMac.app.album("Summer"))
            for device in [bobPhone, bobLaptop] {
                try await waitUntil(device, "the album left Bob's device") { app in try app.albums().isEmpty }
            }
            let revoked = try await within(.seconds(10)) { () -> ZoneID? in
                for await event in laptopEvents {
                    if case .shareRevoked(let zoneID) = event { return zoneID }
                }
                return nil
            }
            #expect(revoked??.zoneName == AlbumSchema.zone)
            #expect(try aliceMac.app.photos(in: try aliceMac.app.album("Summer")).count == 2)
        }
    }

    /// The participant's other device hears of the accept by push (the shared database's
    /// subscription fires on the acceptance's own commit), with no fetch of its own.
    func hearsOfTheAccept(_ device: AlbumDeviceUnderTest) async throws {
        try await waitUntil(device, "the other device hears of the accept", timeout: .seconds(10)) { app in
            try !app.albums().filter { !$0.isOwned }.isEmpty
        }
    }

    @Test func aReadOnlyParticipantSeesButCannotEditUntilTheOwnerLetsThem() async throws {
        try await AlbumWorld.with { world in
            let (aliceMac, bobPhone, _, bobName) = try await world.aliceAndBob()

            let trip = try aliceMac.app.createAlbum(title: "Trip")
            try aliceMac.app.addPhoto(to: trip, file: try world.picture("hill"), caption: "Hill")
            try await aliceMac.app.sync()
            let url = try await aliceMac.app.share(trip, with: [.init(userRecordName: bobName, permission: .readOnly)])

            let album = try await bobPhone.app.join(url)
            #expect(!album.canEdit)
            let photo = try #require(try bobPhone.app.photos(in: album).first)
            #expect(throws: AlbumError.readOnly("Trip")) { try bobPhone.app.setCaption("Mine", of: photo) }
            #expect(throws: AlbumError.readOnly("Trip")) {
                try bobPhone.app.addPhoto(to: album, file: try world.picture("x"), caption: "x")
            }
            #expect(try bobPhone.app.store.pendingCount() == 0)

            // Alice's later caption still reaches Bob by push.
            try aliceMac.app.setCaption("Hill at noon", of: try aliceMac.app.photo(photo.recordName))
            try await aliceMac.app.engine.sendChanges()
            try await waitUntil(bobPhone, "Alice's caption reached Bob") { app in
                try app.photo(photo.recordName).caption == "Hill at noon"
            }

            // Alice lets Bob write: his device notices while it runs, and his caption goes through.
            try await aliceMac.app.setPermission(
                .readWrite, for: .init(userRecordName: bobName), in: try aliceMac.app.album("Trip"))
            try await waitUntil(bobPhone, "Bob may write") { app in try app.album("Trip").canEdit }
            try bobPhone.app.setCaption("Hill, by Bob", of: try bobPhone.app.photo(photo.recordName))
            try await bobPhone.app.engine.sendChanges()
            try await waitUntil(aliceMac, "Bob's caption reached Alice") { app in
                try app.photo(photo.recordName).caption == "Hill, by Bob"
            }
        }
    }

    @Test func captionsAreSealedOnTheDeviceAndReadByTheOtherUsersDevices() async throws {
        try await AlbumWorld.with { world in
            // Bob's laptop was enrolled by a code from his phone (AlbumWorld.aliceAndBob).
            let (aliceMac, bobPhone, bobLaptop, bobName) = try await world.aliceAndBob()
            let caption = "MARKER-caption-\(UUID().uuidString.prefix(8))"
            let reply = "MARKER-reply-\(UUID().uuidString.prefix(8))"

            let garden = try aliceMac.app.createAlbum(title: "Secret garden")
            try aliceMac.app.addPhoto(to: garden, file: try world.picture("rose"), caption: caption)
            try await aliceMac.app.sync()
            let url = try await aliceMac.app.share(garden, with: [.init(userRecordName: bobName, permission: .readWrite)])
            let joined = try await bobPhone.app.join(url)
            #expect(try bobPhone.app.photos(in: joined).map(\.caption) == [caption])
            try await waitUntil(bobLaptop, "the caption reached Bob's laptop") { app in
                try app.albums().first { !$0.isOwned }.map { try app.photos(in: $0).map(\.caption) } == [caption]
            }

            // Bob answers in the caption, on his laptop: Alice reads it.
            let photo = try #require(try bobLaptop.app.photos(in: try bobLaptop.app.album("Secret garden")).first)
            try bobLaptop.app.setCaption(reply, of: photo)
            try await bobLaptop.app.engine.sendChanges()
            try await waitUntil(aliceMac, "Bob's caption reached Alice") { app in
                try app.photo(photo.recordName).caption == reply
            }

            // The server's files hold neither caption; the title, not encrypted, is there.
            #expect(try !world.serverFilesContain(caption))
            #expect(try !world.serverFilesContain(reply))
            #expect(try world.serverFilesContain("Secret garden"))
        }
    }

    @Test func aParticipantWhoLeavesLosesTheAlbumOnEveryDevice() async throws {
        try await AlbumWorld.with { world in
            let (aliceMac, bobPhone, bobLaptop, bobName) = try await world.aliceAndBob()

            let party = try aliceMac.app.createAlbum(title: "Party")
            let url = try await aliceMac.app.share(party, with: [.init(userRecordName: bobName, permission: .readWrite)])
            try await bobPhone.app.join(url)
            try await hearsOfTheAccept(bobLaptop)
            #expect(try !bobLaptop.app.albums().isEmpty)

            try await bobPhone.app.leave(try bobPhone.app.album("Party"))
            #expect(try bobPhone.app.albums().isEmpty)
            try await waitUntil(bobLaptop, "the album left the laptop") { app in try app.albums().isEmpty }
            #expect(try aliceMac.app.album("Party").isOwned)
        }
    }
}
