import ArgumentParser
import Foundation
import ReadingList

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `reading-list`: the Apple News reading-list scenario on Nimbus, one device per directory.
@main
struct ReadingListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reading-list",
        abstract: "A reading list that syncs through Nimbus (one device per --device directory).",
        discussion: """
            Start a server and a container (`nimbus serve`, `nimbus container create`, \
            `nimbus container set-signin C --passwords on`), `reading-list init` each device with its \
            own --device directory, then `reading-list signup`, `verify` and `signin` (or pass an \
            operator-made token, `nimbus user create`, to init's --web-auth-token). Every command reads and writes the device's local store first; the list \
            is there without a network.
            """,
        subcommands: [
            Init.self, SignUp.self, Verify.self, SignIn.self, SignOut.self, Add.self, Remove.self, Read.self,
            List.self, Refresh.self, Watch.self, Thumbnail.self, Status.self,
        ])
}

struct DeviceOptions: ParsableArguments {
    @Option(name: .long, help: "The device directory (default: $READING_LIST_DEVICE or ./.reading-list).")
    var device: String?

    var directory: String {
        device ?? ProcessInfo.processInfo.environment["READING_LIST_DEVICE"] ?? ".reading-list"
    }
}

struct SyncOptions: ParsableArguments {
    @Flag(name: .long, help: "Do not sync: change the local store only (the change is sent later).")
    var offline = false
}

extension ReadingListCommand {
    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set up this device: server, container, tokens; then create the zones and subscription.")
        @Option(name: .long, help: "The server's base URL.") var server = "http://127.0.0.1:8080"
        @Option(name: .long, help: "The container identifier.") var container: String
        @Option(name: .long, help: "An API token of the container.") var apiToken: String
        @Option(name: .long, help: "An operator-made web auth token of the user (or sign in after init).")
        var webAuthToken: String?
        @Option(name: .long, help: "development or production.") var environment = "development"
        @OptionGroup var device: DeviceOptions
        @OptionGroup var sync: SyncOptions

        func run() async throws {
            try await ReadingListCommands().initialize(
                directory: device.directory, serverURL: server, container: container, apiToken: apiToken,
                webAuthToken: webAuthToken, environment: environment, offline: sync.offline)
        }
    }

    struct SignUp: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "signup", abstract: "Register a built-in account; the server mails a code to verify.")
        @Option(name: .long, help: "The account's email address.") var email: String
        @Option(name: .long, help: "Its password.") var password: String
        @OptionGroup var device: DeviceOptions

        func run() async throws {
            try await ReadingListCommands().signUp(directory: device.directory, email: email, password: password)
        }
    }

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Verify an account's address with the mailed code.")
        @Option(name: .long, help: "The account's email address.") var email: String
        @Option(name: .long, help: "The code from the mail.") var code: String
        @OptionGroup var device: DeviceOptions

        func run() async throws {
            try await ReadingListCommands().verify(directory: device.directory, email: email, code: code)
        }
    }

    struct SignIn: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "signin", abstract: "Sign in; the session is kept in the device directory. Then sync.")
        @Option(name: .long, help: "The account's email address.") var email: String
        @Option(name: .long, help: "Its password.") var password: String
        @OptionGroup var device: DeviceOptions
        @OptionGroup var sync: SyncOptions

        func run() async throws {
            try await ReadingListCommands().signIn(
                directory: device.directory, email: email, password: password, offline: sync.offline)
        }
    }

    struct SignOut: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "signout", abstract: "Sign out: revoke this device's session (the list stays on the device).")
        @OptionGroup var device: DeviceOptions

        func run() async throws {
            try await ReadingListCommands().signOut(directory: device.directory)
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Bookmark an article.")
        @Argument(help: "The article's URL.") var url: String
        @Option(name: .long, help: "Its title (default: from the URL).") var title: String?
        @Option(name: .long, help: "A picture file for the article (synced as an asset).") var thumbnail: String?
        @OptionGroup var device: DeviceOptions
        @OptionGroup var sync: SyncOptions

        func run() async throws {
            try await ReadingListCommands().add(
                directory: device.directory, url: url, title: title, thumbnail: thumbnail, offline: sync.offline)
        }
    }

    struct Thumbnail: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Fetch an article's thumbnail (downloaded on first use) and print where it is.")
        @Argument(help: "The bookmark's ID (or a unique prefix, or its URL).") var id: String
        @Option(name: .long, help: "Copy the thumbnail to this file.") var output: String?
        @OptionGroup var device: DeviceOptions

        func run() async throws {
            try await ReadingListCommands().thumbnail(directory: device.directory, reference: id, outputFile: output)
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a bookmark.")
        @Argument(help: "The bookmark's ID (or a unique prefix, or its URL).") var id: String
        @OptionGroup var device: DeviceOptions
        @OptionGroup var sync: SyncOptions

        func run() async throws {
            try await ReadingListCommands().remove(directory: device.directory, reference: id, offline: sync.offline)
        }
    }

    struct Read: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Mark an article read.")
        @Argument(help: "The bookmark's ID (or a unique prefix, or a URL).") var id: String
        @OptionGroup var device: DeviceOptions
        @OptionGroup var sync: SyncOptions

        func run() async throws {
            try await ReadingListCommands().read(directory: device.directory, reference: id, offline: sync.offline)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the list from this device's store, then sync and print what changed.")
        @OptionGroup var device: DeviceOptions
        @OptionGroup var sync: SyncOptions

        func run() async throws {
            try await ReadingListCommands().list(directory: device.directory, offline: sync.offline)
        }
    }

    struct Refresh: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Pull to refresh: fetch one zone's changes only.")
        @Argument(help: "ReadingList or ReadingHistory.") var zone = ReadingListSchema.bookmarksZone
        @OptionGroup var device: DeviceOptions

        func run() async throws {
            try await ReadingListCommands().refresh(directory: device.directory, zone: zone)
        }
    }

    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A live view that redraws when a push arrives (Ctrl-C quits).")
        @OptionGroup var device: DeviceOptions
        @Flag(name: .long, help: "Append each redraw instead of clearing the screen.") var plain = false

        func run() async throws {
            try await ReadingListCommands().watch(directory: device.directory, clearScreen: !plain && isatty(1) == 1)
        }
    }
}

extension ReadingListCommand {
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Why didn't it sync? Pending changes, last fetch and send, errors, given-up changes (no network).")
        @Flag(name: .long, help: "Print the diagnostics as JSON.") var json = false
        @OptionGroup var device: DeviceOptions

        func run() async throws {
            try await ReadingListCommands().status(directory: device.directory, json: json)
        }
    }
}
