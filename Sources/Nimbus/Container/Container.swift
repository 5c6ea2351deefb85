import Foundation
import NimbusProtocol

/// A Nimbus container: where an app's data lives on a server, and how to reach it.
/// The SDK's counterpart of `CKContainer`.
///
/// ```swift
/// let container = Container(
///     identifier: "iCloud.com.example.reader",
///     baseURL: URL(string: "https://sync.example.com")!,
///     credentials: .apiToken(apiToken, webAuthToken: userToken))
/// let database = container.privateCloudDatabase
/// ```
public struct Container: Sendable {
    /// The container's environment: schema changes are allowed in development only.
    /// NimbusProtocol's ``ContainerEnvironment``, the one type the server and the SDK share.
    public typealias Environment = ContainerEnvironment

    public let identifier: String
    public let environment: Environment
    /// The server's base URL (`https://sync.example.com`); requests go to
    /// `{baseURL}/database/1/{identifier}/{environment}/…`.
    public let baseURL: URL
    public let credentials: Credentials
    /// Identifies this device to the server (`X-Nimbus-Device-ID`), so pushes caused by this
    /// device's own changes are not sent back to it. Keep it stable across launches.
    public let deviceID: String
    /// How requests travel.
    public let transport: any Transport
    /// How asset bytes travel (uploads and downloads, streamed from and to files).
    public let assetTransport: any AssetTransport
    /// How long one request may take.
    public var requestTimeout: Duration

    /// - Parameters:
    ///   - identifier: the container identifier (`iCloud.com.example.app`).
    ///   - environment: development (the default) or production.
    ///   - baseURL: the server (`https://sync.example.com`).
    ///   - credentials: an API token and the user's web auth token, or a server-to-server key.
    ///   - deviceID: defaults to a new UUID; pass a persisted one so the server recognises
    ///     this device across launches.
    ///   - transport: defaults to ``HTTPClientTransport``.
    ///   - assetTransport: how asset bytes travel; defaults to `transport` when it is an
    ///     ``AssetTransport`` (``HTTPClientTransport`` is), and to a ``BufferedAssetTransport``
    ///     over it otherwise.
    ///   - requestTimeout: how long one request may take (an asset upload or download may
    ///     take longer: see ``assetTimeout``).
    public init(
        identifier: String, environment: Environment = .development, baseURL: URL, credentials: Credentials,
        deviceID: String = UUID().uuidString, transport: (any Transport)? = nil,
        assetTransport: (any AssetTransport)? = nil, requestTimeout: Duration = .seconds(60)
    ) {
        self.identifier = identifier
        self.environment = environment
        self.baseURL = baseURL
        self.credentials = credentials
        self.deviceID = deviceID
        let transport = transport ?? HTTPClientTransport()
        self.transport = transport
        self.assetTransport = assetTransport ?? (transport as? any AssetTransport) ?? BufferedAssetTransport(transport)
        self.requestTimeout = requestTimeout
    }

    /// How long one asset upload or download request may take (an hour by default: a large
    /// file on a slow link). Cancel the calling task to stop one sooner.
    public var assetTimeout: Duration = .seconds(3600)

    /// This user's end-to-end encryption keys on this device: needed to save and read
    /// ``Record/encryptedValues`` (docs/ENCRYPTION.md). `nil` (the default): records with
    /// encrypted fields fail with ``NimbusError/Code/encryptionKeysMissing``. Not carried over
    /// by ``with(credentials:)``: another user has other keys.
    public var encryption: EncryptionKeys?

    /// The time now: the date a server-to-server request signs
    /// (`X-Apple-CloudKit-Request-ISO8601Date`). The system clock by default; tests set a
    /// fixed one so signatures repeat.
    public var now: @Sendable () -> Date = { Date() }

    /// The container's public database, shared by all its users.
    public var publicCloudDatabase: Database { Database(container: self, scope: .public) }
    /// The signed-in user's private database.
    public var privateCloudDatabase: Database { Database(container: self, scope: .private) }
    /// The records other users shared with the signed-in user.
    public var sharedCloudDatabase: Database { Database(container: self, scope: .shared) }

    /// The database of a scope.
    public func database(with scope: Database.Scope) -> Database {
        Database(container: self, scope: scope)
    }

    /// The same container with other credentials (another user signed in).
    public func with(credentials: Credentials) -> Container {
        var copy = Container(
            identifier: identifier, environment: environment, baseURL: baseURL, credentials: credentials,
            deviceID: deviceID, transport: transport, assetTransport: assetTransport, requestTimeout: requestTimeout)
        copy.assetTimeout = assetTimeout
        return copy
    }

    /// The signed-in user's record ID in this container (`users/current`).
    public func userRecordID() async throws -> Record.ID {
        let response = try await publicCloudDatabase.send("users/current", method: .get, body: nil)
        guard let name = response["userRecordName"]?.string else {
            throw NimbusError.malformedResponse("users/current returned no userRecordName")
        }
        return Record.ID(recordName: name)
    }
}
