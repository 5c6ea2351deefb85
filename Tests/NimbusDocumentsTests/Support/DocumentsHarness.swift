import Foundation
import Nimbus
import NimbusDocuments
import NimbusServer
import NimbusStore
import NimbusSync
import NimbusTestSupport
import NIOConcurrencyHelpers

/// A real server with one user, and devices that each sync a folder of their own through it.
final class DocumentsHarness: ServerHarnessLayer {
    static let containerID = "iCloud.com.example.documents"
    let harness: ServerHarness
    let webToken: String

    private init(harness: ServerHarness, webToken: String) {
        self.harness = harness
        self.webToken = webToken
    }

    /// Runs `body` against a fresh server on `engine`, always stopped and removed after.
    static func with<T>(
        engine: Engine, configure: (inout ServerConfiguration) -> Void = { _ in }, _ body: (DocumentsHarness) async throws -> T
    ) async throws -> T {
        try await ServerHarness.with(engine, container: containerID, configure: configure) { harness in
            let user = try await harness.server.store.createUser(
                name: "ana", email: nil, firstName: nil, lastName: nil, container: containerID)
            return try await body(DocumentsHarness(harness: harness, webToken: user.token))
        }
    }

    func container(device: String, transfers: CountingTransfers? = nil) -> Container {
        Container(
            identifier: Self.containerID, baseURL: URL(string: server.baseURL)!,
            credentials: .apiToken(apiToken, webAuthToken: webToken), deviceID: device, assetTransport: transfers)
    }

    /// Device `name`: its folder `<directory>/<name>/folder`, its state beside it. The same
    /// name again is the same device relaunched (same folder, same state).
    func device(_ name: String, policy: DocumentsFolder.DownloadPolicy = .keepEverythingLocal) throws -> Device {
        let base = URL(fileURLWithPath: directory).appendingPathComponent(name)
        let state = base.appendingPathComponent("state")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        let noWaiting = SyncClock(sleep: { _ in
            try Task.checkCancellation()
            await Task.yield()
        })
        let transfers = CountingTransfers()
        let engine = SyncEngine(
            service: DatabaseSyncService(database: container(device: name, transfers: transfers).privateCloudDatabase),
            store: try LocalStore(path: state.appendingPathComponent("documents.sqlite").path, clock: noWaiting),
            configuration: DocumentsFolder.configuration())
        let root = base.appendingPathComponent("folder")
        let folder = try DocumentsFolder(folder: root, engine: engine, stateDirectory: state, device: name, policy: policy)
        return Device(name: name, folder: folder, root: root, transfers: transfers)
    }
}

/// One device: its synced folder and the library over it.
struct Device {
    let name: String
    let folder: DocumentsFolder
    let root: URL
    /// The asset bytes this device moved.
    let transfers: CountingTransfers

    func url(_ path: String) -> URL {
        path.split(separator: "/").reduce(root) { $0.appendingPathComponent(String($1)) }
    }

    func write(_ text: String, to path: String) throws {
        let url = url(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    func read(_ path: String) -> String? {
        (try? Data(contentsOf: url(path))).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Every file below the root (relative path → contents) and every folder (→ `nil`).
    func tree() throws -> [String: String?] {
        var result: [String: String?] = [:]
        guard let enumerator = FileManager.default.enumerator(atPath: root.path) else { return result }
        while let path = enumerator.nextObject() as? String {
            let url = root.appendingPathComponent(path)
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder) else { continue }
            let name = url.lastPathComponent
            if FolderReader.isIgnored(name) { continue }
            result[path] = isFolder.boolValue ? .some(nil) : .some(read(path))
        }
        return result
    }
}

/// The SDK's streaming asset transport, counting each upload and download it carries.
final class CountingTransfers: AssetTransport {
    private let base = HTTPClientTransport()
    private let counts = NIOLockedValueBox((uploads: 0, uploadedBytes: Int64(0), downloads: 0))
    private let uploadHook = NIOLockedValueBox<(@Sendable (URL) throws -> Void)?>(nil)

    /// Upload requests sent (a file's bytes in one or more ranges count once per range).
    var uploads: Int { counts.withLockedValue { $0.uploads } }
    var uploadedBytes: Int64 { counts.withLockedValue { $0.uploadedBytes } }
    var downloads: Int { counts.withLockedValue { $0.downloads } }

    /// Runs `hook` once, with the file being sent, at the start of the next upload (before
    /// its bytes go): a seam to change the folder while an upload is in flight.
    func duringNextUpload(_ hook: @escaping @Sendable (URL) throws -> Void) {
        uploadHook.withLockedValue { $0 = hook }
    }

    func upload(
        _ request: TransportRequest, file: URL, range: Range<Int64>, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> TransportResponse {
        counts.withLockedValue {
            $0.uploads += 1
            $0.uploadedBytes += range.upperBound - range.lowerBound
        }
        let hook = uploadHook.withLockedValue { hook in
            defer { hook = nil }
            return hook
        }
        try hook?(file)
        return try await base.upload(request, file: file, range: range, progress: progress)
    }

    func download(
        _ request: TransportRequest, into file: URL, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> TransportResponse {
        counts.withLockedValue { $0.downloads += 1 }
        return try await base.download(request, into: file, progress: progress)
    }
}
