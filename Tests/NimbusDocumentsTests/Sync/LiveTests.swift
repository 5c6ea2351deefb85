import Foundation
import Nimbus
import NimbusDocuments
import NimbusSync
import NimbusServer
import NimbusTestSupport
import Testing

/// Live: a push from another device's change makes the folder sync without the app asking,
/// and an edit made while a change waits to be sent is not lost.
@Suite("Documents live")
struct LiveTests {
    @Test(arguments: Engine.available)
    func anotherDevicesChangeArrivesByPush(engine: Engine) async throws {
        try await DocumentsHarness.with(engine: engine) { harness in
            let mac = try harness.device("mac")
            let phone = try harness.device("phone")
            try await mac.folder.start()
            try await phone.folder.start()
            let events = phone.folder.engine.events()
            await phone.folder.listen(to: PushClient(container: harness.container(device: "phone")))
            let connected = try await firstValue(events) {
                if case .pushConnectionChanged(let state) = $0 { state.isConnected } else { false }
            }
            #expect(connected)
            try await phone.folder.sync()  // after the pass the connection started: only a push can bring what follows
            let observed = await phone.folder.observe()
            try mac.write("pushed", to: "Inbox/new.txt")
            try await mac.folder.sync()
            // No sync() on the phone: the push brings it.
            let arrived = try await firstValue(observed) { items in items.contains { $0.path.description == "Inbox/new.txt" && $0.isDownloaded } }
            #expect(arrived)
            #expect(phone.read("Inbox/new.txt") == "pushed")
            await phone.folder.stop()
            // Turning sync off keeps the files.
            #expect(phone.read("Inbox/new.txt") == "pushed")
        }
    }

    /// A file edited again after its change was queued (scanned offline) and before it was
    /// sent: the next pass sends the newer bytes; the other device ends with them.
    @Test(arguments: Engine.available)
    func anEditWhileWaitingToUploadIsSentNext(engine: Engine) async throws {
        try await DocumentsHarness.with(engine: engine) { harness in
            let mac = try harness.device("mac")
            let phone = try harness.device("phone")
            try mac.write("v1", to: "draft.txt")
            try await mac.folder.start()
            try await phone.folder.start()
            try mac.write("v2 queued", to: "draft.txt")
            try await mac.folder.scan()
            try mac.write("v3 written while v2 waited", to: "draft.txt")
            try await mac.folder.sync()
            try await phone.folder.sync()
            #expect(phone.read("draft.txt") == "v3 written while v2 waited")
            #expect(try await mac.folder.item(at: DocumentPath("draft.txt"))?.isUploading == false)
        }
    }
}

/// What the server refuses for good stays where it is.
@Suite("Documents the server refuses")
struct RefusedTests {
    /// A file over the server's asset limit: its save is given up (the engine says why), the
    /// file stays in the folder, untouched and unsynced, and the other files sync.
    @Test(arguments: Engine.available)
    func aFileTheServerRefusesStaysOnDisk(engine: Engine) async throws {
        try await DocumentsHarness.with(engine: engine, configure: { $0.assets.maxAssetBytes = 1_000 }) { harness in
            let mac = try harness.device("mac")
            let phone = try harness.device("phone")
            let big = String(repeating: "b", count: 5_000)
            try mac.write(big, to: "big.bin")
            try mac.write("small", to: "small.txt")
            try await mac.folder.start()
            try await mac.folder.sync()
            try await phone.folder.start()
            #expect(mac.read("big.bin") == big)
            #expect(try phone.tree() == ["small.txt": "small"])
            let givenUp = try mac.folder.engine.store.givenUp()
            #expect(givenUp.count == 1)
            #expect(givenUp.first?.error?.serverErrorCode == "LIMIT_EXCEEDED")
            #expect(try await mac.folder.items().map(\.path.description) == ["small.txt"])
            // Made small enough, it syncs.
            try mac.write("now small", to: "big.bin")
            try await mac.folder.sync()
            try await mac.folder.sync()
            try await phone.folder.sync()
            #expect(try phone.tree() == ["small.txt": "small", "big.bin": "now small"])
        }
    }
}

/// The first value of `stream` that satisfies `predicate`, within `timeout`; `false` if none.
func firstValue<T: Sendable>(
    _ stream: AsyncStream<T>, timeout: Duration = .seconds(60), where predicate: @escaping @Sendable (T) -> Bool
) async throws -> Bool {
    try await withThrowingTaskGroup(of: Bool.self) { group in
        group.addTask {
            for await value in stream where predicate(value) { return true }
            return false
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return false
        }
        let result = try await group.next() ?? false
        group.cancelAll()
        return result
    }
}
