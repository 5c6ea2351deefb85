import Foundation
import Nimbus
import NimbusSync

/// One device of the album app: how it reaches the server (`album-device.json` in its
/// directory) and its local store beside it.
///
/// ```swift
/// let app = try AlbumDevice.open(directory: ".shared-album").app
/// print(try app.albums().map(\.title))      // from the local store, no network
/// ```
public struct AlbumDevice: Sendable {
    public struct Configuration: Codable, Sendable, Equatable {
        public var serverURL: String
        public var container: String
        public var apiToken: String
        /// The user's web auth token (`nimbus user create` makes one).
        public var webAuthToken: String
        /// This device's stable ID: the server spares a device the pushes of its own changes.
        public var deviceID: String

        public init(serverURL: String, container: String, apiToken: String, webAuthToken: String, deviceID: String = UUID().uuidString) {
            self.serverURL = serverURL
            self.container = container
            self.apiToken = apiToken
            self.webAuthToken = webAuthToken
            self.deviceID = deviceID
        }
    }

    public static let configurationFile = "album-device.json"
    public static let storeFile = "album.sqlite"
    /// Where the device keeps the user's account key (`0700`; never copy it elsewhere).
    public static let keysDirectory = "keys"

    public let directory: String
    public let app: SharedAlbum

    /// Saves the configuration in `directory` (created if needed) and opens the device.
    @discardableResult
    public static func initialize(directory: String, configuration: Configuration) throws -> AlbumDevice {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = (directory as NSString).appendingPathComponent(configurationFile)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(configuration).write(to: URL(fileURLWithPath: path), options: .atomic)
        // It holds the user's token.
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return try open(directory: directory)
    }

    /// Opens a device initialized before. Touches no network.
    public static func open(directory: String) throws -> AlbumDevice {
        let path = (directory as NSString).appendingPathComponent(configurationFile)
        guard let data = FileManager.default.contents(atPath: path) else {
            throw NimbusError(.invalidArguments, "\(directory) is not an album device: run `shared-album init` first")
        }
        let configuration = try JSONDecoder().decode(Configuration.self, from: data)
        guard let url = URL(string: configuration.serverURL), url.scheme != nil else {
            throw NimbusError(.invalidArguments, "'\(configuration.serverURL)' is not a server URL")
        }
        var container = Container(
            identifier: configuration.container, baseURL: url,
            credentials: .apiToken(configuration.apiToken, webAuthToken: configuration.webAuthToken),
            deviceID: configuration.deviceID, requestTimeout: .seconds(15))
        // The user's end-to-end encryption keys on this device (captions are sealed with them).
        container.encryption = EncryptionKeys(
            store: FileKeyStore(directory: URL(fileURLWithPath: (directory as NSString).appendingPathComponent(keysDirectory))))
        let app = try SharedAlbum(container: container, storePath: (directory as NSString).appendingPathComponent(storeFile))
        return AlbumDevice(directory: directory, app: app)
    }
}
