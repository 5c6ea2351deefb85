import ArgumentParser
import Foundation
import Nimbus
import NimbusDocuments
import NimbusSync

/// `nimbus-drive`: keeps one local folder in sync with the documents zone of a Nimbus user
/// (NimbusDocuments), until interrupted; `--once` syncs once and exits.
@main
struct NimbusDrive: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nimbus-drive",
        abstract: "Keep a folder in sync with a Nimbus server (files and folders on every device).",
        discussion: """
            Every option can come from the environment instead: NIMBUS_SERVER, NIMBUS_CONTAINER, \
            NIMBUS_API_TOKEN, NIMBUS_WEB_AUTH_TOKEN. The folder's sync state (and uploads waiting to \
            be sent) is kept in --state, outside the folder. Changes made in the folder while the \
            command runs are seen at once where the system reports them (inotify on Linux), and at \
            the next scan (--interval) otherwise; other devices' changes arrive by push.
            """)

    @Argument(help: "The folder to sync (created if missing).") var folder: String
    @Option(name: .long, help: "The server's base URL.") var server: String?
    @Option(name: .long, help: "The container identifier.") var container: String?
    @Option(name: .long, help: "An API token of the container.") var apiToken: String?
    @Option(name: .long, help: "The user's web auth token (`nimbus user create` makes one).") var webAuthToken: String?
    @Option(name: .long, help: "development or production.") var environment = "development"
    @Option(name: .long, help: "Where the sync state is kept (default: <folder>.nimbus-drive beside it).") var state: String?
    @Option(name: .long, help: "This device's name, shown in conflict versions.") var device = ProcessInfo.processInfo.hostName
    @Option(name: .long, help: "Seconds between scans of the folder (15 times as long where its changes are watched).") var interval: Double = 2
    @Flag(name: .long, help: "Download documents only when asked (list them with --list).") var onDemand = false
    @Flag(name: .long, help: "Sync once and exit.") var once = false
    @Flag(name: .long, help: "After syncing, list the tree with each item's size and state.") var list = false

    func run() async throws {
        let environmentValues = ProcessInfo.processInfo.environment
        func value(_ option: String?, _ name: String) throws -> String {
            if let option { return option }
            if let found = environmentValues[name], !found.isEmpty { return found }
            throw ValidationError("missing --\(name.dropFirst(7).lowercased().replacingOccurrences(of: "_", with: "-")) (or \(name))")
        }
        guard let baseURL = URL(string: try value(server, "NIMBUS_SERVER")) else { throw ValidationError("--server is not a URL") }
        guard let containerEnvironment = Container.Environment(rawValue: environment) else {
            throw ValidationError("--environment is development or production")
        }
        let root = URL(fileURLWithPath: folder).standardizedFileURL
        let stateDirectory = URL(fileURLWithPath: state ?? root.path + ".nimbus-drive")
        let container = Container(
            identifier: try value(self.container, "NIMBUS_CONTAINER"), environment: containerEnvironment, baseURL: baseURL,
            credentials: .apiToken(try value(apiToken, "NIMBUS_API_TOKEN"), webAuthToken: try value(webAuthToken, "NIMBUS_WEB_AUTH_TOKEN")),
            deviceID: try Self.deviceID(in: stateDirectory))
        let documents = try DocumentsFolder(
            folder: root, container: container, stateDirectory: stateDirectory, device: device,
            policy: onDemand ? .onDemand : .keepEverythingLocal)
        let progress = Task { await Self.showProgress(documents.engine.events()) }
        defer { progress.cancel() }
        try await documents.start()
        if list { try await Self.printTree(documents) }
        if once { return }
        print("syncing \(root.path) (Ctrl-C to stop)")
        await documents.listen(to: PushClient(container: container))
        // Events where the system gives them; the scans on the timer catch what they miss.
        let watching = await documents.watch()
        await documents.run(every: .milliseconds(Int(interval * (watching ? 15 : 1) * 1000)))
    }

    /// The device's ID, made once and kept in the state directory, so the server knows it across runs.
    static func deviceID(in directory: URL) throws -> String {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("device-id")
        if let saved = try? String(contentsOf: file, encoding: .utf8), !saved.isEmpty { return saved }
        let id = UUID().uuidString
        try id.write(to: file, atomically: true, encoding: .utf8)
        return id
    }

    /// Prints each long transfer's progress (files over a megabyte), about every tenth.
    static func showProgress(_ events: AsyncStream<SyncEvent>) async {
        var shown: [String: Int] = [:]
        for await event in events {
            guard case .assetProgress(let transfer) = event, transfer.progress.totalBytes > 1 << 20 else { continue }
            let tenth = Int(transfer.progress.fractionCompleted * 10)
            let key = "\(transfer.direction)-\(transfer.recordName)"
            guard shown[key] != tenth else { continue }
            shown[key] = tenth
            let verb = transfer.direction == .upload ? "uploading" : "downloading"
            let megabytes = Double(transfer.progress.totalBytes) / 1_048_576
            print("\(verb) \(transfer.recordName): \(tenth * 10)% of \(String(format: "%.1f", megabytes)) MB")
            if tenth == 10 { shown[key] = nil }
        }
    }

    static func printTree(_ documents: DocumentsFolder) async throws {
        for item in try await documents.items() {
            let state = item.kind == .folder ? "folder" : item.isDownloaded ? "downloaded" : "not downloaded"
            let pending = item.isUploading ? ", uploading" : ""
            let conflict = item.conflictOf == nil ? "" : ", conflict version"
            print("\(item.path)\t\(item.size) bytes\t\(state)\(pending)\(conflict)")
        }
    }
}
