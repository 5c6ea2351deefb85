import Foundation
import Nimbus
import NimbusProtocol

/// A container: where an app's data lives on the Nimbus server, and its three databases.
///
/// ```swift
/// let container = CKContainer(identifier: "iCloud.com.example.notes")
/// guard try await container.accountStatus() == .available else { return }
/// let notes = try await container.privateCloudDatabase.records(matching: query)
/// ```
///
/// The server and the signed-in user come from ``NimbusConnection/current`` when the
/// container is made (the environment, or ``NimbusConnection/configure(_:)``). Without one,
/// every request fails with ``CKError/Code/badContainer``.
public final class CKContainer: NSObject, Sendable {
    public let containerIdentifier: String?
    /// The SDK container; `nil` when no server is configured.
    let nimbus: Container?
    /// Whether the connection carries a signed-in user's token.
    let hasUserToken: Bool

    public let privateCloudDatabase: CKDatabase
    public let publicCloudDatabase: CKDatabase
    public let sharedCloudDatabase: CKDatabase

    /// The container with this identifier on the configured server.
    public convenience init(identifier containerIdentifier: String) {
        self.init(identifier: containerIdentifier, connection: NimbusConnection.current)
    }

    /// The container with this identifier on `connection`'s server (`nil`: none configured).
    public init(identifier containerIdentifier: String, connection: NimbusConnection?) {
        self.containerIdentifier = containerIdentifier
        let nimbus = connection?.container(identifier: containerIdentifier)
        self.nimbus = nimbus
        self.hasUserToken = connection?.webAuthToken != nil
        self.privateCloudDatabase = CKDatabase(nimbus?.privateCloudDatabase, scope: .private)
        self.publicCloudDatabase = CKDatabase(nimbus?.publicCloudDatabase, scope: .public)
        self.sharedCloudDatabase = CKDatabase(nimbus?.sharedCloudDatabase, scope: .shared)
    }

    /// The app's default container: `NIMBUS_CONTAINER` (or the configured
    /// ``NimbusConnection/defaultContainerIdentifier``). Without one its identifier is
    /// `iCloud.default` and requests fail with ``CKError/Code/badContainer``.
    public static func `default`() -> CKContainer {
        let connection = NimbusConnection.current
        guard let identifier = connection?.defaultContainerIdentifier else {
            return CKContainer(identifier: "iCloud.default", connection: nil)
        }
        return CKContainer(identifier: identifier, connection: connection)
    }

    /// The database of a scope.
    public func database(with databaseScope: CKDatabase.Scope) -> CKDatabase {
        switch databaseScope {
        case .private: return privateCloudDatabase
        case .public: return publicCloudDatabase
        case .shared: return sharedCloudDatabase
        }
    }

    /// The SDK container, or ``CKError/Code/badContainer`` when no server is configured.
    func configured() throws(CKError) -> Container {
        guard let nimbus else { throw CKError.notConfigured }
        return nimbus
    }

    // MARK: - Account

    /// Whether a user is signed in: `.noAccount` without a web auth token or when the server
    /// refuses it, `.available` when the server accepts it.
    public func accountStatus() async throws -> CKAccountStatus {
        let container = try configured()
        guard hasUserToken else { return .noAccount }
        do {
            _ = try await container.userRecordID()
            return .available
        } catch let error as NimbusError where error.code == .notAuthenticated {
            return .noAccount
        } catch {
            throw CKError.wrapping(error)
        }
    }

    public func accountStatus(completionHandler: @escaping @Sendable (CKAccountStatus, (any Error)?) -> Void) {
        Task {
            do { completionHandler(try await accountStatus(), nil) } catch { completionHandler(.couldNotDetermine, error) }
        }
    }

    /// The signed-in user's record ID (`users/current`).
    /// - Throws: ``CKError/Code/notAuthenticated`` when nobody is signed in.
    public func userRecordID() async throws -> CKRecord.ID {
        let container = try configured()
        return try await mappingErrors { CKRecord.ID(try await container.userRecordID()) }
    }

    public func fetchUserRecordID(completionHandler: @escaping @Sendable (CKRecord.ID?, (any Error)?) -> Void) {
        Task {
            do { completionHandler(try await userRecordID(), nil) } catch { completionHandler(nil, error) }
        }
    }

    /// Runs an operation with this container (its database operations against the private
    /// database, unless they name another), on the queue databases run theirs on (a
    /// long-lived operation that runs already, handed back by ``longLivedOperation(for:)``,
    /// is left running).
    public func add(_ operation: CKOperation) {
        guard !LongLivedOperations.isRunning(operation) else { return }
        operation.configuration.container = self
        CKDatabase.queue.addOperation(operation)
    }

    public override var description: String { "<CKContainer: \(containerIdentifier ?? "-")>" }
}

extension CKError {
    static var notConfigured: CKError {
        CKError(
            .badContainer,
            message: "no Nimbus server is configured: set NIMBUS_URL and NIMBUS_API_TOKEN (and NIMBUS_WEB_AUTH_TOKEN "
                + "for a signed-in user), or call NimbusConnection.configure(_:) before creating the container")
    }
}
