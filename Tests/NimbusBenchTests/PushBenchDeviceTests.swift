// The push bench's devices are Linux-only (epoll, SO_TIMESTAMPNS).
#if os(Linux)
import Foundation
import Logging
import NimbusEngines
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

@testable import NimbusBench

/// The push bench's measuring parts against a real server: devices on raw sockets read by
/// one epoll thread, device A's saves over a raw HTTP/1.1 connection, and the kernel's
/// arrival stamps both are timed with.
@Suite struct PushBenchDeviceTests {
    static let container = "iCloud.com.example.bench"

    @Test func everyDeviceGetsEverySaveStampedAfterItWasSentAndBeforeItWasRead() async throws {
        try await withServer { server, apiToken, userToken in
            let base = server.baseURL
            let query = "ckAPIToken=\(apiToken)&ckWebAuthToken=\(userToken)"
            @Sendable func target(_ operation: String) -> String {
                "/database/1/\(Self.container)/development/private/\(operation)?\(query)"
            }
            // The bench's HTTP connection blocks: it runs on a thread of its own, as in the bench.
            let setUpStatuses = try await PushLatencyRun.onThread { () throws -> [Int] in
                let setUp = try BenchHTTPConnection(base)
                return try [
                    ("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Bench"}}}]}"#),
                    (
                        "subscriptions/modify",
                        #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"bench","subscriptionType":"query","zoneID":{"zoneName":"Bench"},"query":{"recordType":"Ping"},"firesOn":["create"],"notificationInfo":{"shouldSendContentAvailable":true,"desiredKeys":["seq"]}}}]}"#
                    ),
                ].map { operation, body in
                    try setUp.post(target(operation), headers: [("X-Nimbus-Device-ID", "A")], body: Array(body.utf8)).status
                }
            }
            #expect(setUpStatuses == [200, 200])

            let fleet = try DeviceFleet(threads: 2)
            let push = base.replacingOccurrences(of: "http://", with: "ws://") + "/push/\(Self.container)/development?\(query)"
            try await fleet.connect((0..<5).map { "\(push)&deviceID=B\($0)" }, concurrency: 2)

            let saves = try await PushLatencyRun.onThread { () throws -> [(sent: Int64, arrival: Arrival)] in
                let writer = try BenchHTTPConnection(base)
                return try (0..<3).map { seq in
                    let answer = try PushLatencyRun.save(writer, target: target("records/modify"), seq: seq)
                    return (answer.sent, answer.arrival)
                }
            }
            try await fleet.waitForPushes(15, timeout: .seconds(20))
            let arrivals = await fleet.stop()

            #expect(Set(arrivals.keys) == [0, 1, 2])
            for seq in 0..<3 {
                let answer = saves[seq]
                #expect(answer.sent <= answer.arrival.kernel && answer.arrival.kernel <= answer.arrival.read)
                let pushes = arrivals[seq] ?? []
                #expect(pushes.count == 5, "seq \(seq): \(pushes.count) pushes")
                for push in pushes {
                    #expect(push.kernel > answer.sent, "a push before its save was sent")
                    #expect(push.kernel <= push.read, "the kernel's stamp after the read")
                }
            }
        }
    }

    @Test func aWriterRefusedByTheServerThrowsWithTheServersReason() async throws {
        try await withServer { server, apiToken, _ in
            let base = server.baseURL
            let target = "/database/1/\(Self.container)/development/private/records/modify?ckAPIToken=\(apiToken)&ckWebAuthToken=nope"
            let refusal = try await PushLatencyRun.onThread { () throws -> String? in
                let writer = try BenchHTTPConnection(base)
                do {
                    _ = try PushLatencyRun.save(writer, target: target, seq: 1)
                    return nil
                } catch let error as BenchError {
                    return "\(error)"
                }
            }
            #expect(refusal?.contains("AUTHENTICATION") == true, "\(refusal ?? "no error")")
        }
    }

    @Test func aDeviceTheServerRefusesFailsTheConnect() async throws {
        try await withServer { server, apiToken, _ in
            let fleet = try DeviceFleet()
            let push = server.baseURL.replacingOccurrences(of: "http://", with: "ws://")
                + "/push/\(Self.container)/development?ckAPIToken=\(apiToken)&ckWebAuthToken=nope&deviceID=B"
            // The server upgrades, then closes with the reason: connecting, or the next wait, fails with it.
            let refusal = await #expect(throws: BenchError.self) {
                try await fleet.connect([push])
                try await fleet.waitForPushes(1, timeout: .seconds(20))
            }
            #expect("\(refusal.map { "\($0)" } ?? "")".contains("AUTHENTICATION_FAILED"), "\(String(describing: refusal))")
            _ = await fleet.stop()
        }
    }

    /// Runs `body` with a fresh server (the shared ``ServerHarness``), its API token and a user's
    /// web auth token; the harness stops the server and removes its data whatever happens.
    private func withServer(_ body: (RunningServer, String, String) async throws -> Void) async throws {
        try await ServerHarness.with(.sqlite, container: Self.container) { harness in
            let userToken = try await harness.server.store.createUser(
                name: "bench", email: nil, firstName: nil, lastName: nil, container: Self.container
            ).token
            try await body(harness.server, harness.apiToken, userToken)
        }
    }
}
#endif
