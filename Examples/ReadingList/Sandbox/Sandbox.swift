import Foundation
import Logging
import NimbusEngines
import NimbusServer
import NimbusStore
import ReadingList

/// An embedded server on a fresh temporary data directory, one provisioned user, and
/// simulated devices of that user (each with its own local store): what `nimbus-demo` and
/// `nimbus-bench sync` run on. Everything goes over real HTTP and WebSocket on 127.0.0.1.
public struct Sandbox: Sendable {
    /// The temporary directory: the server's data and each device's local store.
    public let directory: String
    /// The embedded server on 127.0.0.1 and a free port.
    public let server: RunningServer
    /// The provisioned container (`iCloud.com.example.news`).
    public let container: String
    /// The container's API token.
    public let apiToken: String
    /// The provisioned user's web auth token.
    public let webAuthToken: String

    /// Starts a server on a fresh directory named after `name` and provisions one user.
    public static func start(name: String, logLevel: Logger.Level = .error) async throws -> Sandbox {
        let runID = String(UUID().uuidString.prefix(8)).lowercased()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-\(name)-\(runID)").path
        var logger = Logger(label: "nimbus")
        logger.logLevel = logLevel
        let server = try await RunningServer.start(
            ServerConfiguration(port: 0, dataDirectory: (directory as NSString).appendingPathComponent("server")),
            logger: logger)
        do {
            let container = "iCloud.com.example.news"
            let api = try await server.store.createContainer(container)
            let user = try await server.store.createUser(
                name: "reader", email: "reader@example.com", firstName: "Ada", lastName: "Reader", container: container)
            return Sandbox(
                directory: directory, server: server, container: container, apiToken: api.token,
                webAuthToken: user.token)
        } catch {
            try? await server.stop()
            throw error
        }
    }

    /// A device of the user (or of the user `webAuthToken` signs in), with its own
    /// directory and local store.
    public func device(
        _ name: String, webAuthToken: String? = nil, now: @escaping @Sendable () -> Int64 = ReadingList.wallClock
    ) throws -> Device {
        try Device.initialize(
            directory: (directory as NSString).appendingPathComponent("device-\(name)"),
            configuration: DeviceConfiguration(
                serverURL: server.baseURL, container: container, apiToken: apiToken,
                webAuthToken: webAuthToken ?? self.webAuthToken, deviceID: "device-\(name)-\(UUID().uuidString.prefix(8))"),
            now: now)
    }

    /// Another user of the container; returns their web auth token.
    public func addUser(_ name: String) async throws -> String {
        try await server.store.createUser(name: name, email: nil, firstName: nil, lastName: nil, container: container).token
    }

    /// Stops the server and (unless `keep`) deletes the directory.
    public func stop(keep: Bool) async {
        try? await server.stop()
        if !keep { try? FileManager.default.removeItem(atPath: directory) }
    }
}
