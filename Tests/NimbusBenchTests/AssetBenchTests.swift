import Foundation
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

@testable import NimbusBench

/// `nimbus-bench assets` on tiny files, so that it keeps working: every run completes, the
/// bytes come back as sent, a resume sends only what the server lacks. On SQLite, and on
/// PostgreSQL when `NIMBUS_TEST_POSTGRES_URL` names one.
@Suite struct AssetBenchTests {
    @Test func everyRunCompletesOnSQLite() async throws {
        try await runBench(postgres: nil)
    }

    @Test(.enabled(if: Engine.postgresURL != nil, Engine.postgresHowTo)) func everyRunCompletesOnPostgreSQL() async throws {
        try await runBench(postgres: Engine.postgresURL)
    }

    @Test func theCopyLoopCopiesEveryByte() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("asset-bench-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let source = directory + "/a", target = directory + "/b"
        let checksum = try BenchFiles.makeRandomFile(at: source, size: 3 * BenchFiles.chunkSize + 5)
        #expect(try BenchFiles.copy(source, to: target) == Int64(3 * BenchFiles.chunkSize + 5))
        #expect(try BenchFiles.checksum(of: target) == checksum)
    }

    private func runBench(postgres: String?) async throws {
        let runID = String(UUID().uuidString.prefix(8)).lowercased()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("asset-bench-test-\(runID)").path
        let files = root + "/files"
        try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        // Not the shared harness: the bench's own server (AssetBenchCommand.withServer, what
        // `nimbus-bench assets` runs) is part of what this test runs; it stops the server and,
        // with keepData false, removes this storage whatever the body does.
        var configuration = ServerConfiguration(port: 0)
        configuration.storage =
            postgres.map { .postgres(url: $0, schema: "nimbus_bench_\(runID)") } ?? .sqlite(directory: root + "/server")
        var logger = Logger(label: "asset-bench-test")
        logger.logLevel = .critical
        // Sizes that are not a whole number of the server's or the client's 1 MiB chunks.
        var settings = AssetBench.Settings(
            sizes: [100_000, 2_500_000], repetitions: 2, resumeSize: 2_300_001, clients: 3, concurrentSize: 1_200_000,
            directory: files)
        // The nginx yardstick where nginx is installed (`.ci/run` installs Debian's nginx-core).
        let nginx = try? NginxPeer.executable(nil)
        if let nginx {
            settings.nginx = try await NginxPeer.start(executable: nginx, directory: root + "/nginx")
            settings.targets = .files
        }
        defer { settings.nginx?.stop() }
        let report = try await AssetBenchCommand.withServer(
            configuration, clients: 3, runID: runID, keepData: false, logger: logger
        ) { client in
            try await AssetBench(client: client, settings: settings).run()
        }

        #expect(report.throughput.map(\.size) == [100_000, 2_500_000])
        for result in report.throughput {
            #expect(result.copy.count == 2 && result.upload.count == 2 && result.download.count == 2)
            #expect(result.rates(result.upload).best > 0 && result.rates(result.download).best > 0)
            #expect(result.ratios(result.upload, to: result.copy).best > 0)
            if nginx != nil {
                #expect(result.peerUpload.count == 2 && result.peerDownload.count == 2)
                #expect(result.ratios(result.download, to: result.peerDownload).median > 0)
                #expect(result.json["nginxDownload"]?["medianMBps"] != nil)
            }
            #expect(!result.lines.isEmpty)
        }
        #expect(report.resumes.count == 2)
        for resume in report.resumes {
            // Nothing the server already held is sent again.
            #expect(resume.sentAfterCut == Int64(resume.size) - resume.heldAtResume)
            #expect(resume.heldAtResume > 0 && resume.heldAtResume <= resume.sentBeforeCut)
        }
        // Every byte of the cut POST reached the server (written to the socket before the
        // close), and the server kept all of them.
        let post = try #require(report.resumes.first { $0.cutPost })
        #expect(post.sentBeforeCut == 1_150_000 && post.heldAtResume == 1_150_000, "\(post)")
        let put = try #require(report.resumes.first { !$0.cutPost })
        #expect(put.heldAtResume == 1_150_000 && put.sentAfterCut == 1_150_001 && put.targetMet)
        let concurrent = try #require(report.concurrent)
        #expect(concurrent.clients == 3 && concurrent.seconds > 0)
        #if os(Linux)
        // Sampled, not compared: in the test process other suites allocate and free beside the
        // run, so its peak may fall below the baseline taken before it (the bench's own process
        // has nothing else).
        #expect(concurrent.baselineBytes > 0 && concurrent.peakBytes > 0)
        #endif
    }
}
