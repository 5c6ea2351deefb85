import Foundation
import Nimbus
import NimbusProtocol

/// Where NimbusCloudKit finds its server and signed-in user: what replaces the iCloud account
/// and the entitlements of an app on Apple's CloudKit.
///
/// A process reads it from the environment, so code written for CloudKit runs unchanged:
///
/// | Variable | Meaning |
/// |---|---|
/// | `NIMBUS_URL` | the server (`https://sync.example.com`); required |
/// | `NIMBUS_API_TOKEN` | the container's API token; required |
/// | `NIMBUS_WEB_AUTH_TOKEN` | the signed-in user's web auth token; without it `accountStatus()` is `.noAccount` |
/// | `NIMBUS_CONTAINER` | the identifier `CKContainer.default()` uses |
/// | `NIMBUS_ENVIRONMENT` | `development` (the default) or `production` |
/// | `NIMBUS_KEYS_DIRECTORY` | where this device keeps the user's encryption keys (``encryption``), for ``CKRecord/encryptedValues`` |
///
/// An app that prefers code makes one call at launch, before it creates a container:
///
/// ```swift
/// NimbusConnection.configure(NimbusConnection(
///     serverURL: URL(string: "https://sync.example.com")!, apiToken: apiToken,
///     webAuthToken: session.token, defaultContainerIdentifier: "iCloud.com.example.notes"))
/// let database = CKContainer.default().privateCloudDatabase
/// ```
///
/// A container takes the connection current when it is created; containers made before a
/// new `configure` call keep the old one (sign a new user in, then make new containers).
public struct NimbusConnection: Sendable {
    /// The server's base URL.
    public var serverURL: URL
    /// The container's API token (`ckAPIToken`).
    public var apiToken: String
    /// The signed-in user's web auth token (`ckWebAuthToken`); `nil` when nobody is signed in.
    public var webAuthToken: String?
    /// The identifier `CKContainer.default()` uses (CloudKit derives it from the app's bundle).
    public var defaultContainerIdentifier: String?
    /// Development (schema changes allowed) or production.
    public var environment: ContainerEnvironment
    /// Identifies this device to the server, so pushes caused by its own changes are not sent
    /// back to it. Defaults to one UUID per process.
    public var deviceID: String
    /// How requests travel; the SDK's HTTP client when `nil`.
    public var transport: (any Transport)?
    /// The signed-in user's end-to-end encryption keys on this device, which
    /// ``CKRecord/encryptedValues`` need (the SDK's ``Nimbus/EncryptionKeys``). From the
    /// environment: `NIMBUS_KEYS_DIRECTORY` names a directory for a ``Nimbus/FileKeyStore``.
    public var encryption: EncryptionKeys?

    public init(
        serverURL: URL, apiToken: String, webAuthToken: String? = nil, defaultContainerIdentifier: String? = nil,
        environment: ContainerEnvironment = .development, deviceID: String = NimbusConnection.processDeviceID,
        transport: (any Transport)? = nil
    ) {
        self.serverURL = serverURL
        self.apiToken = apiToken
        self.webAuthToken = webAuthToken
        self.defaultContainerIdentifier = defaultContainerIdentifier
        self.environment = environment
        self.deviceID = deviceID
        self.transport = transport
    }

    /// The connection the environment describes, or `nil` when `NIMBUS_URL` or
    /// `NIMBUS_API_TOKEN` is missing or `NIMBUS_URL` is not a URL.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> NimbusConnection? {
        guard let text = environment["NIMBUS_URL"], let url = URL(string: text), url.scheme != nil,
            let apiToken = environment["NIMBUS_API_TOKEN"], !apiToken.isEmpty
        else { return nil }
        let token = environment["NIMBUS_WEB_AUTH_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        let containerEnvironment = environment["NIMBUS_ENVIRONMENT"].flatMap(ContainerEnvironment.init(rawValue:))
        var connection = NimbusConnection(
            serverURL: url, apiToken: apiToken, webAuthToken: token,
            defaultContainerIdentifier: environment["NIMBUS_CONTAINER"],
            environment: containerEnvironment ?? .development)
        if let directory = environment["NIMBUS_KEYS_DIRECTORY"], !directory.isEmpty {
            connection.encryption = EncryptionKeys(store: FileKeyStore(directory: URL(fileURLWithPath: directory)))
        }
        return connection
    }

    /// Makes `connection` the one new containers use, in place of the environment's.
    public static func configure(_ connection: NimbusConnection) {
        configured.withLock { $0 = connection }
    }

    /// The connection new containers use: the configured one, else the environment's.
    public static var current: NimbusConnection? {
        configured.current ?? fromEnvironment()
    }

    /// One device ID for the whole process.
    public static let processDeviceID = UUID().uuidString

    private static let configured = Locked<NimbusConnection?>(nil)

    /// The SDK container for `identifier` over this connection.
    func container(identifier: String) -> Container {
        var container = Container(
            identifier: identifier, environment: environment, baseURL: serverURL,
            credentials: .apiToken(apiToken, webAuthToken: webAuthToken), deviceID: deviceID, transport: transport)
        container.encryption = encryption
        return container
    }
}
