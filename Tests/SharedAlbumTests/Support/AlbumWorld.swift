import Foundation
import Logging
import Nimbus
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import NimbusSync
import SharedAlbum

/// A real server on an ephemeral port (the shared ``ServerHarness``), users, and their album
/// devices (each its own directory, local store, sync engine and push channel, in the
/// harness's directory).
final class AlbumWorld: ServerHarnessLayer {
    let harness: ServerHarness
    let container = "iCloud.com.example.album"

    private init(harness: ServerHarness) {
        self.harness = harness
    }

    /// Runs `body` in a fresh world and always stops it (server, storage and files), whether
    /// `body` returns or throws.
    static func with<T>(_ body: (AlbumWorld) async throws -> T) async throws -> T {
        try await ServerHarness.with(container: "iCloud.com.example.album") { try await body(AlbumWorld(harness: $0)) }
    }

    /// A new user's web auth token.
    func user(_ name: String) async throws -> String {
        try await server.store.createUser(name: name, email: nil, firstName: name, lastName: nil, container: container).token
    }

    /// A device of the user with `token`, started, with its push channel connected and its
    /// encryption keys: set up on the user's first device, enrolled by code through
    /// `enrolledBy` (another device of the same user) otherwise.
    func device(_ name: String, token: String, enrolledBy: AlbumDeviceUnderTest? = nil) async throws -> AlbumDeviceUnderTest {
        let device = try AlbumDevice.initialize(
            directory: (directory as NSString).appendingPathComponent(name),
            configuration: .init(
                serverURL: server.baseURL, container: container, apiToken: apiToken, webAuthToken: token,
                deviceID: "device-\(name)"))
        let app = device.app
        try await app.engine.start()
        if let enrolledBy {
            let invitation = try await enrolledBy.app.offerEnrolment()
            let ticket = try await app.requestEnrolment(code: invitation.code)
            guard try await enrolledBy.app.answerEnrolment(invitation), try await app.completeEnrolment(ticket) else {
                throw NimbusError(.encryptionKeysMissing, "the enrolment of \(name) was not answered")
            }
        } else {
            try await app.setUpKeys()
        }
        return AlbumDeviceUnderTest(app: app, push: try await PushLink.connect(app))
    }

    /// Whether any file the server keeps (its database, WAL, asset files) holds `marker`.
    func serverFilesContain(_ marker: String) throws -> Bool {
        let root = (directory as NSString).appendingPathComponent("server")
        let needle = Data(marker.utf8)
        let files = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
        return try files.contains { file in
            let path = (root as NSString).appendingPathComponent(file)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { return false }
            return try Data(contentsOf: URL(fileURLWithPath: path)).range(of: needle) != nil
        }
    }

    /// Two users: Alice with her Mac, Bob with his phone and laptop; and Bob's record name
    /// (what Alice shares with).
    func aliceAndBob() async throws -> (
        aliceMac: AlbumDeviceUnderTest, bobPhone: AlbumDeviceUnderTest, bobLaptop: AlbumDeviceUnderTest, bobName: String
    ) {
        let (alice, bob) = (try await user("alice"), try await user("bob"))
        let bobPhone = try await device("bob-phone", token: bob)
        return (
            try await device("alice-mac", token: alice), bobPhone, try await device("bob-laptop", token: bob, enrolledBy: bobPhone),
            try await bobPhone.app.container.userRecordID().recordName
        )
    }

    /// A picture file (bytes that differ per name).
    func picture(_ name: String) throws -> URL {
        let url = URL(fileURLWithPath: directory).appendingPathComponent("\(name).jpg")
        try Data((0..<2048).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ name.utf8.count) }).write(to: url)
        return url
    }
}

struct AlbumDeviceUnderTest: Sendable {
    let app: SharedAlbum
    let push: PushLink
}

/// A device's push channel feeding its engine: each push makes it fetch.
final class PushLink: Sendable {
    let task: Task<Void, Never>

    private init(task: Task<Void, Never>) {
        self.task = task
    }

    /// Connects and returns once the server has the channel open.
    static func connect(_ app: SharedAlbum, timeout: Duration = .seconds(10)) async throws -> PushLink {
        let (notifications, forward) = AsyncStream<PushNotification>.makeStream(bufferingPolicy: .bufferingNewest(1))
        await app.engine.listen(to: notifications)
        let (connected, signal) = AsyncStream<Void>.makeStream()
        let client = PushClient(container: app.container)
        let task = Task {
            for await event in client.events() {
                switch event {
                case .connected: signal.yield()
                case .notification(let notification): forward.yield(notification)
                default: break
                }
            }
        }
        let link = PushLink(task: task)
        guard try await within(timeout, { await connected.first(where: { true }) != nil }) == true else {
            task.cancel()
            throw NimbusError(.networkFailure, "the push channel did not connect")
        }
        return link
    }

    deinit { task.cancel() }
}

/// Waits until `condition` holds on the device: checked now, then after each event of its
/// engine (every change of its store is followed by one), failing after `timeout`.
func waitUntil(
    _ device: AlbumDeviceUnderTest, _ what: String, timeout: Duration = .seconds(10),
    _ condition: @escaping @Sendable (SharedAlbum) throws -> Bool
) async throws {
    let app = device.app
    let events = app.engine.events()
    if try condition(app) { return }
    let held = try await within(timeout) {
        for await _ in events where (try? condition(app)) == true { return true }
        return false
    }
    guard held == true else { throw NimbusError(.networkFailure, "timed out waiting until \(what)") }
}

/// `body`'s result, or `nil` when `timeout` passes first.
func within<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async -> T) async throws -> T? {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        let first = try await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
