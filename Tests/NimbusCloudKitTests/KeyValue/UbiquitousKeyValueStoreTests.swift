import Foundation
import NimbusCloudKit
import NimbusKeyValue
import NimbusTestSupport
import Testing

/// `NSUbiquitousKeyValueStore` code, unchanged but for its import, against a real server:
/// values set on one device reach another, which is told by `didChangeExternallyNotification`
/// with Foundation's `userInfo` keys.
@Suite("NSUbiquitousKeyValueStore")
struct UbiquitousKeyValueStoreTests {
    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-kvs-\(UUID().uuidString)", isDirectory: true)
    }

    /// The next `didChangeExternallyNotification` of `store`: its reason and keys.
    final class Changes: Sendable {
        let stream: AsyncStream<(reason: Int, keys: [String])>
        // `nonisolated(unsafe)`: the token is set once in init and only handed back to
        // NotificationCenter's thread-safe removeObserver in deinit.
        nonisolated(unsafe) private let observer: any NSObjectProtocol

        init(of store: NSUbiquitousKeyValueStore) {
            let (stream, continuation) = AsyncStream<(reason: Int, keys: [String])>.makeStream()
            self.stream = stream
            observer = NotificationCenter.default.addObserver(
                forName: NSUbiquitousKeyValueStore.didChangeExternallyNotification, object: store, queue: nil
            ) { note in
                let reason = note.userInfo?[NSUbiquitousKeyValueStoreChangeReasonKey] as? Int ?? -1
                let keys = note.userInfo?[NSUbiquitousKeyValueStoreChangedKeysKey] as? [String] ?? []
                continuation.yield((reason, keys))
            }
        }

        func next() async throws -> (reason: Int, keys: [String]) {
            try await withTimeout {
                for await change in self.stream { return change }
                throw CancellationError()
            }
        }

        deinit { NotificationCenter.default.removeObserver(observer) }
    }

    @Test(arguments: Engine.available)
    func valuesSetOnOneDeviceReachAnotherWithTheNotification(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            var connection = try await server.connection(user: "ada")
            let phone = NSUbiquitousKeyValueStore(connection: connection, directory: Self.directory())
            #expect(phone.synchronize())
            phone.set("dark", forKey: "theme")
            phone.set(Int64(3), forKey: "launches")
            phone.set(["swift", 6, true] as [Any], forKey: "recent")
            phone.set(["width": 800.5] as [String: Any], forKey: "window")
            #expect(await phone.keyValueStore?.synchronize() == true)

            connection.deviceID = UUID().uuidString
            let laptopDirectory = Self.directory()
            let laptop = NSUbiquitousKeyValueStore(connection: connection, directory: laptopDirectory)
            let changes = Changes(of: laptop)
            #expect(laptop.synchronize())  // at launch, after adding the observer
            let initial = try await changes.next()
            #expect(initial.reason == NSUbiquitousKeyValueStoreInitialSyncChange)
            #expect(initial.keys == ["launches", "recent", "theme", "window"])
            #expect(laptop.string(forKey: "theme") == "dark")
            #expect(laptop.longLong(forKey: "launches") == 3)
            #expect(laptop.object(forKey: "launches") as? Int64 == 3)
            let recent = try #require(laptop.array(forKey: "recent"))
            #expect(recent.count == 3 && recent[0] as? String == "swift" && recent[1] as? Int64 == 6 && recent[2] as? Bool == true)
            #expect(laptop.dictionary(forKey: "window")?["width"] as? Double == 800.5)
            #expect(laptop.dictionaryRepresentation.count == 4)

            // Both stores listen to pushes once their first sync is done (each device's own
            // channel: the phone's and the laptop's), and the phone's store sends by itself.
            try await server.waitForPushDevices(2, of: CKContainer(identifier: CloudKitServer.containerID, connection: connection))
            phone.set(false, forKey: "onboarding")
            let pushed = try await changes.next()
            #expect(pushed.reason == NSUbiquitousKeyValueStoreServerChange)
            #expect(pushed.keys == ["onboarding"])
            #expect(laptop.object(forKey: "onboarding") as? Bool == false)
            try? FileManager.default.removeItem(at: laptopDirectory)
        }
    }

    @Test func withoutAServerTheValuesStayOnTheDevice() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = NSUbiquitousKeyValueStore(connection: nil, directory: directory)
        store.set(2.5, forKey: "zoom")
        store.set("x", forKey: String(repeating: "k", count: 65))  // a key beyond 64 bytes is not stored
        store.set(NSObject(), forKey: "object")  // nor a value of a type the store cannot hold
        #expect(store.synchronize())
        #expect(store.double(forKey: "zoom") == 2.5)
        #expect(store.dictionaryRepresentation.keys.sorted() == ["zoom"])
        store.removeObject(forKey: "zoom")
        #expect(store.object(forKey: "zoom") == nil)
        store.set(Data([1, 2]), forKey: "blob")
        let reopened = NSUbiquitousKeyValueStore(connection: nil, directory: directory)
        #expect(reopened.data(forKey: "blob") == Data([1, 2]))
    }

    /// Keys that are not strings (a dictionary keyed by numbers, at the top or deeper in an
    /// array or dictionary): the value is not stored, as a property list refuses them; the
    /// store is unchanged and the other values stay.
    @Test func dictionariesKeyedByOtherThanStringsAreNotStored() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = NSUbiquitousKeyValueStore(connection: nil, directory: directory)
        store.set(["width": 800] as [String: Any], forKey: "window")
        store.set([1: "one"] as [Int: String], forKey: "numbers")
        store.set(["nested": [2: "two"] as [Int: String]] as [String: Any], forKey: "nested")
        store.set([["ok": 1] as [String: Any], [3.5: "x"] as [Double: String]] as [Any], forKey: "list")
        store.set([4: "four"] as [Int: String], forKey: "window")  // over a stored value: it stays
        #expect(store.dictionaryRepresentation.keys.sorted() == ["window"])
        #expect((store.dictionary(forKey: "window")?["width"] as? Int64) == 800)
        #expect(store.object(forKey: "numbers") == nil)
    }
}
