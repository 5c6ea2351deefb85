import Foundation
import Nimbus
import NimbusCloudKit
import NimbusTestSupport
import Testing

/// CKSyncEngine's fetch of a zone larger than a page: pages read while the delegate handled
/// an event come together in the next one, and a record's last change wins.
@Suite("CKSyncEngine: pages read ahead", .timeLimit(.minutes(10)))
struct SyncEnginePageBatchTests {
    @Test func pagesReadWhileTheDelegateIsBusyComeInOneEvent() async throws {
        try await CloudKitServer.with { server in
            let connection = try await server.connection(user: "ada")
            let writer = ContactsDevice()
            await writer.start(database: CKContainer(identifier: CloudKitServer.containerID, connection: connection).privateCloudDatabase)
            await writer.createZone()
            // Five pages of the server's 200.
            for index in 0..<1_000 { await writer.edit("c\(index)", name: "Contact \(index)", at: Date(timeIntervalSince1970: 10)) }
            try await writer.syncEngine.sendChanges()

            // The new device's zone requests, counted as they leave.
            let (asked, counter) = AsyncStream<Int>.makeStream()
            var reader = connection
            reader.deviceID = "device-b"
            reader.transport = CountingTransport(path: "/records/changes", counted: counter)
            let device = ContactsDevice()
            await device.start(database: CKContainer(identifier: CloudKitServer.containerID, connection: reader).privateCloudDatabase)
            // The delegate holds the first page's event until the fifth page is asked for. A
            // page is asked for only once the one before the page it follows is read, so by
            // then pages 2 and 3 are read.
            await device.hold(at: "fetchedRecordZoneChanges")
            let fetch = Task { try await device.syncEngine.fetchChanges() }
            try await withTimeout(seconds: 60) {
                for await count in asked where count >= 5 { return }
            }
            await device.release()
            try await fetch.value

            let fetched = await device.events.filter { $0.hasPrefix("fetchedRecordZoneChanges") }
            let counts = fetched.compactMap { event in
                event.split(separator: "(").last?.split(separator: " ").first.flatMap { Int($0) }
            }
            #expect(counts.reduce(0, +) == 1_000, "\(fetched)")
            #expect(counts.count < 5, "\(fetched)")
            #expect(counts.contains { $0 >= 400 }, "\(fetched)")
            #expect(await device.contacts.count == 1_000)
            #expect(await device.contacts["c999"]?.name == "Contact 999")
        }
    }
}

/// The SDK's transport, counting the requests whose path ends with `path`.
private struct CountingTransport: Transport {
    let base = HTTPClientTransport()
    let path: String
    let counted: AsyncStream<Int>.Continuation
    private let count = Locked(0)

    init(path: String, counted: AsyncStream<Int>.Continuation) {
        self.path = path
        self.counted = counted
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        if request.url.path.hasSuffix(path) {
            var number = 0
            count.update {
                $0 += 1
                number = $0
            }
            counted.yield(number)
        }
        return try await base.send(request)
    }
}
