import Foundation
import Logging
import NimbusCloudKit
import NimbusServer
import NimbusProtocol
import NimbusStore
import NimbusTestSupport

/// A real Nimbus server on an ephemeral loopback port over fresh storage, with one container
/// provisioned (the shared ``ServerHarness``), and CloudKit containers signed in to it.
final class CloudKitServer: ServerHarnessLayer {
    static let containerID = "iCloud.com.example.cloudkit"

    let harness: ServerHarness

    private init(harness: ServerHarness) {
        self.harness = harness
    }

    /// Runs `body` against a fresh server on `engine`, then stops it and removes its data,
    /// also when `body` throws.
    static func with<T: Sendable>(
        engine: Engine = .sqlite, configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: (CloudKitServer) async throws -> T
    ) async throws -> T {
        try await ServerHarness.with(engine, container: containerID, configure: configure) {
            try await body(CloudKitServer(harness: $0))
        }
    }

    /// The server's port on 127.0.0.1.
    var port: Int { server.port }

    /// The connection of a new signed-in user (or nobody, with `user` nil).
    func connection(
        user: String?, email: String? = nil, firstName: String? = nil, lastName: String? = nil
    ) async throws -> NimbusConnection {
        var token: String?
        if let user {
            token = try await server.store.createUser(
                name: user, email: email, firstName: firstName, lastName: lastName, container: Self.containerID
            ).token
        }
        return NimbusConnection(
            serverURL: URL(string: server.baseURL)!, apiToken: apiToken, webAuthToken: token,
            defaultContainerIdentifier: Self.containerID, deviceID: UUID().uuidString)
    }

    /// The container as `user` sees it.
    func container(user: String?) async throws -> CKContainer {
        CKContainer(identifier: Self.containerID, connection: try await connection(user: user))
    }
}

/// Thread-safe list of events, for callback-order assertions.
final class CallbackLog: Sendable {
    private let lock = NSLock()
    // `nonisolated(unsafe)`: `entries` and `waiters` are read and written only while `lock` is held.
    nonisolated(unsafe) private var entries: [String] = []
    nonisolated(unsafe) private var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

    func append(_ entry: String) {
        lock.lock()
        entries.append(entry)
        let count = entries.count
        let ready = waiters.filter { $0.count <= count }
        waiters.removeAll { $0.count <= count }
        lock.unlock()
        for waiter in ready { waiter.continuation.resume() }
    }

    /// Returns once `count` entries are logged (failing after 30 s).
    func waitForEntries(_ count: Int) async throws {
        try await withTimeout {
            await withCheckedContinuation { continuation in
                self.lock.lock()
                if self.entries.count >= count {
                    self.lock.unlock()
                    continuation.resume()
                } else {
                    self.waiters.append((count, continuation))
                    self.lock.unlock()
                }
            }
        }
    }

    var events: [String] {
        lock.lock()
        defer { lock.unlock() }
        return entries
    }
}

extension CloudKitServer {
    /// Waits until the server has `count` push connections for the container's user.
    func waitForPushDevices(_ count: Int, of container: CKContainer) async throws {
        let recipient = NotificationRecipient(
            container: Self.containerID, environment: .development,
            userRecordName: try await container.userRecordID().recordName)
        let hub = server.push
        try await withTimeout { await hub.waitForConnectedDevices(count, of: recipient) }
    }
}

/// Runs `body`, failing after `seconds` (a guard against hangs, not a way of waiting).
func withTimeout<T: Sendable>(
    seconds: Double = 30, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw CKError(.internalError, userInfo: [NSLocalizedDescriptionKey: "timed out"])
        }
        let result = try await group.next()!
        group.cancelAll()
        return result
    }
}

/// Saves `count` records of `type` named `prefix0`, `prefix1`, … with `order` 0, 1, … (to query
/// in pages).
func saveOrdered(_ count: Int, type: CKRecord.RecordType, prefix: String, in database: CKDatabase) async throws {
    let records = (0..<count).map { index -> CKRecord in
        let record = CKRecord(recordType: type, recordID: CKRecord.ID(recordName: "\(prefix)\(index)"))
        record["order"] = index
        return record
    }
    _ = try await database.modifyRecords(saving: records, deleting: [])
}
