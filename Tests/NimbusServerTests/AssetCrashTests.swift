import Foundation
import NIOConcurrencyHelpers
import NIOHTTP1
import NimbusEngines
import NimbusProtocol
import NimbusSQLite
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// A `nimbus serve` process killed with SIGKILL in the middle of asset traffic loses nothing
/// a record references, and the collector reclaims everything else it left behind.
@Suite("Asset crash safety")
struct AssetCrashTests {
    @Test func killNineMidUploadLosesNothingReferencedAndLeaksNothing() async throws {
        // The child `nimbus serve` keeps asset bytes in its data directory (its default), so the
        // harness's server does too, also in CI's pass that moves every harness's assets to S3.
        try await TestServer.with(.sqlite, configure: { $0.assets.location = .engineDefault }) { server in
            guard case .sqlite(let directory) = server.storage else { throw TestFailure("not SQLite storage") }
            // Provisioned (container, user) by the harness's server, stopped before the child starts.
            let signedIn = try await server.user("alice")
            try await server.harness.stopServer()

            let kept = testBytes(400_000, seed: 11)
            let keptURL: String
            do {
                // A process of its own, started by hand because SIGKILL is what the test is about;
                // scoped: killed when this block ends, whatever happens in it.
                let child = try await ServeProcess.start(directory: directory)
                defer { child.kill() }
                var alice = signedIn
                alice.baseURL = child.baseURL
                // Saved: must survive.
                let file = try await alice.uploadAsset(kept, record: "kept", field: "image")
                let saved = try await alice.modify("_defaultZone", [assetOp("create", "kept", ["image": (file, "ASSETID")])])
                #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.text)")
                keptURL = try #require(saved.records.first?["fields"]?["image"]?["value"]?["downloadURL"]?.string)
                // Uploaded, never saved; half of a resumable upload; a POST cut by the kill.
                _ = try await alice.uploadAsset(testBytes(50_000, seed: 12), record: "orphan", field: "image")
                let half = try #require(try await alice.requestUpload(record: "half", field: "image").url)
                _ = try await alice.transfer(
                    half, method: .PUT, bytes: testBytes(1000), headers: [("Content-Range", "bytes 0-999/2000")])
                let cut = try #require(try await alice.requestUpload(record: "cut", field: "image").url)
                let connection = try await RawConnection.open(port: child.port)
                try await connection.send(
                    "POST \(try #require(URL(string: cut)?.path)) HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000000\r\n\r\n")
                try await connection.send(testBytes(300_000, seed: 13))
                // Killed once the server is writing the body.
                var holding = false
                let deadline = ContinuousClock.now + .seconds(20)
                while !holding && ContinuousClock.now < deadline {
                    holding = (try await alice.transfer(cut, method: .GET).json["receivedBytes"]?.int64 ?? 0) > 0
                }
                #expect(holding, "the server never stored any of the cut upload")
                child.kill()
            }
            // A crash between storing bytes and recording them: a blob no row knows.
            let strayFolder = URL(fileURLWithPath: directory).appendingPathComponent("assets/blobs/" + String(repeating: "ab", count: 16))
            try FileManager.default.createDirectory(at: strayFolder, withIntermediateDirectories: true)
            let strayPath = strayFolder.appendingPathComponent(String(repeating: "cd", count: 32)).path
            #expect(FileManager.default.createFile(atPath: strayPath, contents: Data([1, 2, 3])))

            // Restarted on the same data directory (and port), with no grace period for unsaved uploads.
            try await server.harness.restart { $0.assets.gracePeriod = .zero }
            let alice = signedIn  // on the same port
            // The URL handed out before the crash still reads the file (same secret, same row).
            let before = keptURL.replacingOccurrences(of: "http://127.0.0.1:", with: "").drop { $0.isNumber }
            #expect(try await alice.transfer(server.server.baseURL + before, method: .GET).bytes == kept)
            let fresh = try #require(
                try await alice.lookup("kept").records.first?["fields"]?["image"]?["value"]?["downloadURL"]?.string)
            #expect(try await alice.transfer(fresh, method: .GET).bytes == kept)

            // Once the never-saved uploads expire, the collector reclaims all the rest.
            let report = try await server.server.collectAssetsNow(now: wallClockMillis() + 25 * 3_600_000)
            #expect(report.blobs == 2, "the orphan upload's blob and the stray file")
            #expect(report.uploads >= 3, "the orphan's, the half and the cut uploads")
            let assets = URL(fileURLWithPath: directory).appendingPathComponent("assets")
            let blobs = try FileManager.default.subpathsOfDirectory(atPath: assets.appendingPathComponent("blobs").path)
                .filter { $0.contains("/") }
            #expect(blobs.count == 1 && blobs.first?.hasSuffix(AssetLifecycleTests.sha(kept)) == true, "\(blobs)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: assets.appendingPathComponent("uploads").path).isEmpty)
            #expect(try await alice.transfer(fresh, method: .GET).bytes == kept)
        }
    }
}

/// A `nimbus serve` child process on a free port; ``kill()`` ends it with SIGKILL.
final class ServeProcess: Sendable {
    let process: ChildProcess
    let port: Int
    var baseURL: String { "http://127.0.0.1:\(port)" }

    private init(process: ChildProcess, port: Int) {
        self.process = process
        self.port = port
    }

    /// The `nimbus` executable SwiftPM built beside the tests.
    static func executable() throws -> URL {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        var candidates = [Bundle.main.bundleURL.deletingLastPathComponent(), Bundle.main.bundleURL]
        candidates.append(root.appendingPathComponent(".build/debug"))
        for folder in candidates {
            let url = folder.appendingPathComponent("nimbus")
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue,
                FileManager.default.isExecutableFile(atPath: url.path)
            {
                return url
            }
        }
        throw TestFailure("no nimbus executable beside the tests; build with `swift build --build-tests`")
    }

    static func start(directory: String) async throws -> ServeProcess {
        let process = try ChildProcess(
            executable: executable().path,
            arguments: ["serve", "--data", directory, "--port", "0", "--log-level", "critical"], output: .pipe,
            error: .discard)
        guard let output = process.standardOutput else { throw TestFailure("no pipe from nimbus serve") }
        let seen = NIOLockedValueBox((text: "", continuation: CheckedContinuation<Int?, Never>?.none))
        output.readabilityHandler = { handle in
            let data = handle.availableData
            seen.withLockedValue { state in
                state.text += String(decoding: data, as: UTF8.self)
                if data.isEmpty {
                    state.continuation?.resume(returning: nil)
                    state.continuation = nil
                } else if let port = Self.port(in: state.text) {
                    state.continuation?.resume(returning: port)
                    state.continuation = nil
                }
            }
        }
        let port = await withCheckedContinuation { (continuation: CheckedContinuation<Int?, Never>) in
            seen.withLockedValue { state in
                if let port = Self.port(in: state.text) {
                    continuation.resume(returning: port)
                } else {
                    state.continuation = continuation
                }
            }
        }
        output.readabilityHandler = nil
        guard let port else {
            process.send(SIGTERM)
            process.waitUntilExit()
            throw TestFailure("nimbus serve exited before listening: \(seen.withLockedValue { $0.text })")
        }
        return ServeProcess(process: process, port: port)
    }

    /// The port of "Nimbus is listening on http://127.0.0.1:PORT".
    static func port(in text: String) -> Int? {
        guard let range = text.range(of: "listening on http://127.0.0.1:") else { return nil }
        let digits = text[range.upperBound...].prefix(while: \.isNumber)
        guard text[range.upperBound...].dropFirst(digits.count).first != nil else { return nil }
        return Int(digits)
    }

    /// SIGKILL, then waits for the exit (once).
    func kill() {
        process.send(SIGKILL)
        process.waitUntilExit()
    }
}
