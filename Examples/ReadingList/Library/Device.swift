import Foundation
import Nimbus
import NimbusSync

/// How a device reaches its server, saved as `device.json` in the device's directory (with
/// the local store beside it).
public struct DeviceConfiguration: Codable, Sendable, Equatable {
    /// The server's base URL (`http://127.0.0.1:8080`).
    public var serverURL: String
    public var container: String
    public var environment: String
    public var apiToken: String
    /// A web auth token made by the operator (`nimbus user create`); empty when the device
    /// signs in instead (`reading-list signin`, which keeps its session in `session.json`).
    public var webAuthToken: String
    /// This device's stable ID: the server spares a device the pushes of its own changes.
    public var deviceID: String

    public init(
        serverURL: String, container: String, environment: String = Container.Environment.development.rawValue,
        apiToken: String, webAuthToken: String, deviceID: String = UUID().uuidString
    ) {
        self.serverURL = serverURL
        self.container = container
        self.environment = environment
        self.apiToken = apiToken
        self.webAuthToken = webAuthToken
        self.deviceID = deviceID
    }
}

/// One device of the Reading List: its configuration, its local store and its sync engine.
///
/// ```swift
/// let device = try Device.open(directory: "~/.reading-list")
/// print(try device.readingList.bookmarks())      // from the local store, no network
/// try await device.readingList.sync()
/// ```
public struct Device: Sendable {
    public static let configurationFile = "device.json"
    public static let storeFile = "reading-list.sqlite"
    /// The signed-in user's session (`reading-list signin`), used instead of the
    /// configuration's operator-made token when present.
    public static let sessionFile = "session.json"

    public let directory: String
    public let configuration: DeviceConfiguration
    public let container: Container
    public let readingList: ReadingList
    /// The session `reading-list signin` stored, if any.
    public let session: AccountSession?

    public var engine: SyncEngine { readingList.engine }

    /// Saves `configuration` in `directory` (created if needed) and opens the device.
    @discardableResult
    public static func initialize(
        directory: String, configuration: DeviceConfiguration,
        now: @escaping @Sendable () -> Int64 = ReadingList.wallClock
    ) throws -> Device {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let path = (directory as NSString).appendingPathComponent(configurationFile)
        try encoder.encode(configuration).write(to: URL(fileURLWithPath: path), options: .atomic)
        // It holds the user's tokens.
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return try open(directory: directory, now: now)
    }

    /// Opens a device initialized before: reads `device.json` and opens the local store.
    /// Touches no network.
    public static func open(directory: String, now: @escaping @Sendable () -> Int64 = ReadingList.wallClock) throws
        -> Device
    {
        let path = (directory as NSString).appendingPathComponent(configurationFile)
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ReadingListError.notInitialized(directory)
        }
        let configuration = try JSONDecoder().decode(DeviceConfiguration.self, from: data)
        return try Device(directory: directory, configuration: configuration, now: now)
    }

    init(directory: String, configuration: DeviceConfiguration, now: @escaping @Sendable () -> Int64) throws {
        guard let url = URL(string: configuration.serverURL), url.scheme != nil else {
            throw ReadingListError.invalidURL(configuration.serverURL)
        }
        self.directory = directory
        self.configuration = configuration
        let sessionPath = (directory as NSString).appendingPathComponent(Self.sessionFile)
        session = try FileManager.default.contents(atPath: sessionPath).map {
            try JSONDecoder().decode(AccountSession.self, from: $0)
        }
        let operatorToken = configuration.webAuthToken.isEmpty ? nil : configuration.webAuthToken
        container = Container(
            identifier: configuration.container,
            environment: Container.Environment(rawValue: configuration.environment) ?? .development, baseURL: url,
            credentials: .apiToken(configuration.apiToken, webAuthToken: session?.webAuthToken ?? operatorToken),
            deviceID: configuration.deviceID, requestTimeout: .seconds(15))
        let store = try LocalStore(path: (directory as NSString).appendingPathComponent(Self.storeFile))
        let engine = SyncEngine(
            service: DatabaseSyncService(database: container.privateCloudDatabase), store: store,
            configuration: ReadingListSchema.syncConfiguration())
        readingList = ReadingList(engine: engine, now: now)
    }

    /// A copy of a thumbnail file in the device directory, which stays until it is uploaded.
    public func keepThumbnail(_ file: URL) throws -> URL {
        let folder = URL(fileURLWithPath: directory).appendingPathComponent("thumbnails", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let copy = folder.appendingPathComponent(UUID().uuidString + "-" + file.lastPathComponent)
        do {
            try FileManager.default.copyItem(at: file, to: copy)
        } catch {
            throw ReadingListError.unreadableFile(file.path)
        }
        return copy
    }

    /// The device's account: signs in and out, keeping the session in `session.json`
    /// (readable by its owner only).
    public func account() async throws -> Account {
        try await Account(
            container: container,
            sessionStore: FileSessionStore(path: (directory as NSString).appendingPathComponent(Self.sessionFile)))
    }

    /// A push client for this device (connects when its events are iterated).
    public func pushClient() -> PushClient {
        PushClient(container: container)
    }
}
