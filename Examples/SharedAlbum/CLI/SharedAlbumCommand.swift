import ArgumentParser
import Foundation
import Nimbus
import NimbusSync
import SharedAlbum

/// `shared-album`: a photo album two users share through Nimbus, one device per directory.
@main
struct SharedAlbumCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shared-album",
        abstract: "A shared photo album that syncs through Nimbus (one device per --device directory).",
        discussion: """
            `shared-album init` each device with its user's token (`nimbus user create`), `create` an \
            album, `add` photos, `share` it with another user's record name (`whoami` prints it); they \
            `join` the URL. `watch` shows changes live, pushed by the server. Captions are encrypted end \
            to end: `init` sets up your keys on your first device; enrol your other devices with \
            `keys offer` there and `keys enrol CODE` here.
            """,
        subcommands: [
            Init.self, WhoAmI.self, Albums.self, Create.self, Add.self, Caption.self, Share.self, Unshare.self,
            Join.self, Leave.self, Sync.self, Watch.self, Status.self, Keys.self,
        ])
}

struct DeviceOptions: ParsableArguments {
    @Option(name: .long, help: "The device directory (default: $SHARED_ALBUM_DEVICE or ./.shared-album).")
    var device: String?

    var directory: String {
        device ?? ProcessInfo.processInfo.environment["SHARED_ALBUM_DEVICE"] ?? ".shared-album"
    }

    /// The device's app, started (setup, fetch, send).
    func app(sync: Bool = true) async throws -> SharedAlbum {
        let app = try AlbumDevice.open(directory: directory).app
        if sync { try await app.engine.start() }
        return app
    }
}

/// Prints the device's albums and photos.
func printAlbums(_ app: SharedAlbum) throws {
    let albums = try app.albums()
    if albums.isEmpty { print("(no albums)") }
    for album in albums {
        let role = album.isOwned ? "mine" : "shared with me, \(album.canEdit ? "read-write" : "read-only")"
        let shared = album.isOwned && album.shareURL != nil ? ", shared: \(album.shareURL!.absoluteString)" : ""
        print("\(album.title) [\(album.recordName.prefix(8))] (\(role)\(shared))")
        for photo in try app.photos(in: album) {
            print("  \(photo.recordName.prefix(8))  \(photo.caption)\(photo.isPending ? "  (unsent)" : "")")
        }
    }
}

extension SharedAlbumCommand {
    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Set up this device: server, container, tokens.")
        @Option(name: .long, help: "The server's base URL.") var server = "http://127.0.0.1:8080"
        @Option(name: .long, help: "The container identifier.") var container: String
        @Option(name: .long, help: "An API token of the container.") var apiToken: String
        @Option(name: .long, help: "The user's web auth token.") var webAuthToken: String
        @OptionGroup var device: DeviceOptions

        func run() async throws {
            let app = try AlbumDevice.initialize(
                directory: device.directory,
                configuration: .init(serverURL: server, container: container, apiToken: apiToken, webAuthToken: webAuthToken)
            ).app
            try await app.engine.start()
            do {
                if let recovery = try await app.setUpKeys() {
                    print("your recovery key (write it down; it is shown once):\n\(recovery.text)")
                }
            } catch let error as NimbusError where error.code == .encryptionKeysMissing {
                print("your keys are on another device: run `shared-album keys offer` there, then `shared-album keys enrol CODE` here")
            }
            print("ready")
        }
    }

    struct WhoAmI: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "whoami", abstract: "Print your user record name (others share albums with it).")
        @OptionGroup var device: DeviceOptions
        func run() async throws {
            print(try await device.app(sync: false).container.userRecordID().recordName)
        }
    }

    struct Albums: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List albums and photos (from the device; --sync first).")
        @Flag(name: .long, help: "Sync before listing.") var sync = false
        @OptionGroup var device: DeviceOptions
        func run() async throws { try printAlbums(try await device.app(sync: sync)) }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create an album.")
        @Argument(help: "The album's title.") var title: String
        @OptionGroup var device: DeviceOptions
        func run() async throws {
            let app = try await device.app()
            let album = try app.createAlbum(title: title)
            try await app.sync()
            print("created \(album.title) [\(album.recordName.prefix(8))]")
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a picture to an album.")
        @Argument(help: "The album (title or record name).") var album: String
        @Argument(help: "The picture file.") var file: String
        @Option(name: .long, help: "Its caption.") var caption = ""
        @OptionGroup var device: DeviceOptions
        func run() async throws {
            let app = try await device.app()
            // A copy the device keeps until it is uploaded.
            let folder = URL(fileURLWithPath: device.directory).appendingPathComponent("pictures", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let copy = folder.appendingPathComponent(UUID().uuidString + "-" + URL(fileURLWithPath: file).lastPathComponent)
            try FileManager.default.copyItem(at: URL(fileURLWithPath: file), to: copy)
            let photo = try app.addPhoto(to: try app.album(album), file: copy, caption: caption)
            try await app.sync()
            print("added \(photo.recordName.prefix(8))")
        }
    }

    struct Caption: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change a photo's caption.")
        @Argument(help: "The photo (record name or prefix).") var photo: String
        @Argument(help: "The new caption.") var caption: String
        @OptionGroup var device: DeviceOptions
        func run() async throws {
            let app = try await device.app()
            try app.setCaption(caption, of: try app.photo(photo))
            try await app.sync()
        }
    }

    struct Share: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Share an album; prints the URL to send.")
        @Argument(help: "The album.") var album: String
        @Option(name: .long, help: "A user record name to share with read-write.") var readWrite: [String] = []
        @Option(name: .long, help: "A user record name to share with read-only.") var readOnly: [String] = []
        @OptionGroup var device: DeviceOptions
        func run() async throws {
            let app = try await device.app()
            let people = readWrite.map { Nimbus.Share.Participant(userRecordName: $0, permission: .readWrite) }
                + readOnly.map { Nimbus.Share.Participant(userRecordName: $0, permission: .readOnly) }
            print(try await app.share(try app.album(album), with: people).absoluteString)
        }
    }

    struct Unshare: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop sharing an album (with one user, or everyone).")
        @Argument(help: "The album.") var album: String
        @Option(name: .long, help: "Only this user record name.") var user: String?
        @OptionGroup var device: DeviceOptions
        func run() async throws {
            let app = try await device.app()
            let target = try app.album(album)
            if let user {
                try await app.removeParticipant(.init(userRecordName: user), from: target)
            } else {
                try await app.stopSharing(target)
            }
        }
    }

    struct Join: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Join an album someone shared (its URL).")
        @Argument(help: "The share URL.") var url: String
        @OptionGroup var device: DeviceOptions
        func run() async throws {
            guard let shareURL = URL(string: url) else { throw ValidationError("'\(url)' is not a URL") }
            let album = try await device.app().join(shareURL)
            print("joined \(album.title) (\(album.canEdit ? "read-write" : "read-only"))")
        }
    }

    struct Leave: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Leave an album shared with you.")
        @Argument(help: "The album.") var album: String
        @OptionGroup var device: DeviceOptions
        func run() async throws {
            let app = try await device.app()
            try await app.leave(try app.album(album))
        }
    }

    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Fetch and send changes.")
        @OptionGroup var device: DeviceOptions
        func run() async throws {
            let app = try await device.app()
            try await app.sync()
            try printAlbums(app)
        }
    }

    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the albums, and again whenever a push brings changes (Ctrl-C stops).")
        @OptionGroup var device: DeviceOptions
        func run() async throws {
            let app = try await device.app()
            let events = app.engine.events()
            await app.engine.listen(to: PushClient(container: app.container).notifications())
            try printAlbums(app)
            for await event in events {
                switch event {
                case .shareAccepted(zoneID: let zoneID): print("— an album of \(zoneID.ownerRecordName ?? "?") is shared with you")
                case .shareRevoked(zoneID: let zoneID): print("— \(zoneID.ownerRecordName ?? "?") no longer shares an album with you")
                case .fetched(_, _, _), .sent(_, _, _): try printAlbums(app)
                default: continue
                }
            }
        }
    }
}

extension SharedAlbumCommand {
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Why didn't it sync? Pending changes, last fetch and send, errors, given-up changes (no network).")
        @Flag(name: .long, help: "Print the diagnostics as JSON.") var json = false
        @OptionGroup var device: DeviceOptions

        func run() async throws {
            let diagnostics = try await device.app(sync: false).engine.diagnostics()
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                encoder.dateEncodingStrategy = .iso8601
                print(String(decoding: try encoder.encode(diagnostics), as: UTF8.self))
            } else {
                diagnostics.reportLines.forEach { print($0) }
            }
        }
    }
}
