import Foundation
import Nimbus
import NimbusKeyValue
import NimbusProtocol
import NimbusSync
import Testing

/// The key-value store across devices of one user, against a real server: values of every
/// type, the limits, the last write winning, offline writes, push, and the change stream's
/// reasons.
@Suite("Key-value store")
struct KeyValueStoreTests {
    /// A device's store over the harness's server; writes wait for ``KeyValueStore/synchronize()``
    /// unless `automatic`.
    static func device(
        _ name: String, in harness: SyncHarness, limits: KeyValueLimits = .iCloud, automatic: Bool = false
    ) throws -> (KeyValueStore, FaultyService) {
        let (engine, service) = try harness.engine(name, configuration: KeyValueStore.configuration())
        return (try KeyValueStore(engine: engine, limits: limits, sendsAutomatically: automatic), service)
    }

    static let date = Date(timeIntervalSince1970: 1_790_000_000.123)

    @Test func everyTypeOfValueReachesTheOtherDeviceAsItWasWritten() async throws {
        try await SyncHarness.with { harness in
            let (phone, _) = try Self.device("phone", in: harness)
            let (laptop, _) = try Self.device("laptop", in: harness)
            try await phone.start()
            try phone.set("dark", forKey: "theme")
            try phone.set(Int64(42), forKey: "launches")
            try phone.set(0.75, forKey: "volume")
            try phone.set(true, forKey: "onboarded")
            try phone.set(Self.date, forKey: "lastOpened")
            try phone.set(Data([0, 1, 2, 255]), forKey: "blob")
            try phone.set([.string("swift"), .int64(6), .bool(false)], forKey: "recent")
            try phone.set(["x": .double(10.5), "nested": .array([.date(Self.date)])], forKey: "window")
            try phone.set("ünïcödé ✓", forKey: "clé 🔑")
            try phone.set(-Double.infinity, forKey: "floor")
            #expect(await phone.synchronize())

            let changes = laptop.changes()
            try await laptop.start()
            let initial = try #require(try await first(changes))
            #expect(initial.reason == .initialSync)
            #expect(Set(initial.keys) == Set(phone.dictionaryRepresentation.keys))
            #expect(laptop.dictionaryRepresentation == phone.dictionaryRepresentation)
            #expect(laptop.string(forKey: "theme") == "dark")
            #expect(laptop.longLong(forKey: "launches") == 42)
            #expect(laptop.double(forKey: "volume") == 0.75)
            #expect(laptop.bool(forKey: "onboarded"))
            #expect(laptop.date(forKey: "lastOpened") == Date(timeIntervalSince1970: 1_790_000_000.123))
            #expect(laptop.data(forKey: "blob") == Data([0, 1, 2, 255]))
            #expect(laptop.array(forKey: "recent") == [.string("swift"), .int64(6), .bool(false)])
            #expect(laptop.dictionary(forKey: "window")?["x"] == .double(10.5))
            #expect(laptop.string(forKey: "clé 🔑") == "ünïcödé ✓")
            #expect(laptop.double(forKey: "floor") == -.infinity)
            // Absent keys and other types, as NSUbiquitousKeyValueStore answers them.
            #expect(laptop.string(forKey: "launches") == nil)
            #expect(laptop.longLong(forKey: "absent") == 0)
            #expect(!laptop.bool(forKey: "absent"))
            #expect(laptop.double(forKey: "launches") == 42)
            #expect(laptop.object(forKey: "absent") == nil)
        }
    }

    @Test func anotherDevicesChangeArrivesByPushNamingTheKeys() async throws {
        try await SyncHarness.with { harness in
            let (phone, _) = try Self.device("phone", in: harness, automatic: true)
            let (laptop, _) = try Self.device("laptop", in: harness)
            try await phone.start()
            try await laptop.start()
            let changes = laptop.changes()
            let events = try #require(laptop.engine).events()
            await laptop.listen(to: PushClient(container: harness.container(device: "laptop")))
            _ = try await firstEvent(events) {
                if case .pushConnectionChanged(let state) = $0 { state.isConnected } else { false }
            }
            try phone.set("light", forKey: "theme")  // sent by the store itself, no synchronize()
            let change = try #require(try await first(changes))
            #expect(change == KeyValueChange(reason: .serverChange, keys: ["theme"]))
            #expect(laptop.string(forKey: "theme") == "light")

            try phone.removeObject(forKey: "theme")
            let removal = try #require(try await first(changes))
            #expect(removal == KeyValueChange(reason: .serverChange, keys: ["theme"]))
            #expect(laptop.object(forKey: "theme") == nil)
            await laptop.engine?.stopListening()
        }
    }

    @Test func theWriteThatReachesTheServerLastWinsOnEveryDevice() async throws {
        try await SyncHarness.with { harness in
            let (phone, _) = try Self.device("phone", in: harness)
            let (laptop, _) = try Self.device("laptop", in: harness)
            try await phone.start()
            try await laptop.start()
            try phone.set("from phone", forKey: "status")
            try phone.set("phone only", forKey: "other")
            try laptop.set("from laptop", forKey: "status")
            #expect(await phone.synchronize())
            #expect(await laptop.synchronize())  // later: its write wins the conflict
            #expect(await phone.synchronize())
            #expect(phone.string(forKey: "status") == "from laptop")
            #expect(laptop.string(forKey: "status") == "from laptop")
            #expect(laptop.string(forKey: "other") == "phone only", "other keys are untouched")
        }
    }

    @Test func writesMadeOfflineAreKeptAndSentWhenTheServerIsBack() async throws {
        try await SyncHarness.with { harness in
            let (phone, phoneService) = try Self.device("phone", in: harness)
            let (laptop, _) = try Self.device("laptop", in: harness)
            try await phone.start()
            try await laptop.start()
            phoneService.fail("modify", with: NimbusError(.networkFailure, "offline"))
            try phone.set(Int64(7), forKey: "streak")
            #expect(await !phone.synchronize())
            #expect(phone.longLong(forKey: "streak") == 7, "the write holds on the device meanwhile")
            #expect(try phone.localStore.pendingCount() == 1)

            phoneService.fail("modify", with: nil)
            #expect(await phone.synchronize())
            #expect(try phone.localStore.pendingCount() == 0)
            #expect(await laptop.synchronize())
            #expect(laptop.longLong(forKey: "streak") == 7)
        }
    }

    @Test func writesBeyondTheLimitsAreRefusedAndReported() async throws {
        try await SyncHarness.with { harness in
            let limits = KeyValueLimits(maximumKeys: 3, maximumTotalBytes: 150, maximumValueBytes: 120, maximumKeyBytes: 8)
            let (phone, _) = try Self.device("phone", in: harness, limits: limits)
            try await phone.start()
            let changes = phone.changes()

            #expect(throws: KeyValueError.invalidKey("much-too-long", maximumBytes: 8)) {
                try phone.set("x", forKey: "much-too-long")
            }
            #expect(throws: KeyValueError.invalidKey("", maximumBytes: 8)) { try phone.set("x", forKey: "") }
            // 110 characters of value, its tag and the key: 121 bytes.
            let big = String(repeating: "a", count: 110)
            #expect {
                try phone.set(big, forKey: "big")
            } throws: { error in
                guard case KeyValueError.quotaExceeded("big", let reason) = error else { return false }
                return reason.contains("the most is 120")
            }
            #expect(try #require(try await first(changes)) == KeyValueChange(reason: .quotaViolation, keys: ["big"]))

            for key in ["a", "b", "c"] { try phone.set(String(repeating: "v", count: 30), forKey: key) }  // 39 bytes each
            #expect(throws: KeyValueError.self) { try phone.set("v", forKey: "d") }  // a fourth key
            try phone.set("short", forKey: "a")  // replacing a key is no new key
            #expect(throws: KeyValueError.self) {
                try phone.set(String(repeating: "w", count: 100), forKey: "b")  // 14 + 109 + 39 = 162 bytes in all
            }
            #expect(phone.dictionaryRepresentation.count == 3)
            #expect(phone.string(forKey: "b") == String(repeating: "v", count: 30), "a refused write changes nothing")
            #expect(phone.size(ofKey: "a") == "a".utf8.count + #"{"s":"short"}"#.utf8.count)
        }
    }

    @Test func theFirstSyncOfAnEmptyStoreIsQuietAndLaterChangesAreServerChanges() async throws {
        try await SyncHarness.with { harness in
            let (phone, _) = try Self.device("phone", in: harness)
            let (laptop, _) = try Self.device("laptop", in: harness)
            try await phone.start()
            let changes = laptop.changes()
            try await laptop.start()  // nothing on the server yet: no change to report
            try phone.set(true, forKey: "synced")
            #expect(await phone.synchronize())
            #expect(await laptop.synchronize())
            #expect(try #require(try await first(changes)) == KeyValueChange(reason: .serverChange, keys: ["synced"]))

            // Relaunched, the laptop's store knows its first sync is done.
            let (relaunched, _) = try Self.device("laptop", in: harness)
            let later = relaunched.changes()
            try phone.set(false, forKey: "synced")
            #expect(await phone.synchronize())
            #expect(await relaunched.synchronize())
            #expect(try #require(try await first(later)) == KeyValueChange(reason: .serverChange, keys: ["synced"]))
        }
    }

    @Test func valuesKeepTheirTypeThroughTheirTaggedForm() throws {
        let values: [KeyValue] = [
            .string(""), .int64(.min), .double(-0.5), .bool(true), .date(Self.date), .data(Data()),
            .array([]), .dictionary(["a": .array([.dictionary([:])])]),
        ]
        for value in values {
            let data = try JSONEncoder().encode(value)
            #expect(try JSONDecoder().decode(KeyValue.self, from: data) == value)
        }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(KeyValue.self, from: Data(#"{"s":"a","i":1}"#.utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(KeyValue.self, from: Data(#"{}"#.utf8)) }
    }
}
