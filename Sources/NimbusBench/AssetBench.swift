import Foundation
import NIOCore
import NIOHTTP1
import NimbusProtocol

/// The asset bench's runs against a server (issue 16, "Benchmark"):
///
/// - throughput: for each size, `repetitions` rounds of (copy the file on the same disk,
///   upload it, download it), interleaved so that each round's three see the same machine;
///   rates as MB/s (10⁶ bytes) and as a ratio to the copy rate.
/// - resume: an upload interrupted at half — a `POST` cut mid-way, and a first `PUT` chunk
///   of half the file — then the server asked what it holds and the rest sent; the bytes
///   sent after the interruption against the file's size.
/// - concurrent: `clients` uploads of one file at once, with this process's resident memory
///   sampled (the embedded server runs in it).
struct AssetBench: Sendable {
    struct Settings: Sendable {
        /// File sizes of the throughput run, in bytes.
        var sizes: [Int] = [1_000_000, 50_000_000]
        var repetitions = 5
        var resumeSize = 50_000_000
        var clients = 20
        var concurrentSize = 50_000_000
        var runs: Set<String> = ["throughput", "resume", "concurrent"]
        /// Where the bench writes its files: the same disk as the server's data.
        var directory: String
        /// The yardstick of the throughput run (`nil`: `--no-nginx`).
        var nginx: NginxPeer? = nil
        /// What the throughput run is judged on, against nginx.
        var targets: AssetBenchTargets? = nil
    }

    let client: AssetBenchClient
    let settings: Settings
    /// The server's memory; `self` when the server is embedded.
    var serverMemory = ProcessMemory()

    struct Report: Sendable {
        var throughput: [ThroughputResult] = []
        var resumes: [ResumeResult] = []
        var concurrent: ConcurrentResult?
    }

    func run() async throws -> Report {
        var report = Report()
        var files: [Int: (path: String, checksum: String)] = [:]
        func file(_ size: Int) throws -> (path: String, checksum: String) {
            if let made = files[size] { return made }
            let path = (settings.directory as NSString).appendingPathComponent("random-\(size).bin")
            let made = (path, try BenchFiles.makeRandomFile(at: path, size: size))
            files[size] = made
            return made
        }
        if settings.runs.contains("throughput") {
            for size in settings.sizes {
                let (path, checksum) = try file(size)
                report.throughput.append(try await throughput(path, size: size, checksum: checksum))
                // The run stamped the file with other bytes: the next run makes a new one.
                files[size] = nil
                try? FileManager.default.removeItem(atPath: path)
            }
        }
        if settings.runs.contains("resume") {
            let (path, checksum) = try file(settings.resumeSize)
            report.resumes.append(try await resume(path, size: settings.resumeSize, checksum: checksum, cutPost: true))
            report.resumes.append(try await resume(path, size: settings.resumeSize, checksum: checksum, cutPost: false))
        }
        if settings.runs.contains("concurrent") {
            let (path, checksum) = try file(settings.concurrentSize)
            report.concurrent = try await concurrent(path, size: settings.concurrentSize, checksum: checksum)
        }
        for (_, made) in files { try? FileManager.default.removeItem(atPath: made.path) }
        return report
    }

    // MARK: - Throughput

    private func throughput(_ path: String, size: Int, checksum: String) async throws -> ThroughputResult {
        let copyPath = path + ".copy"
        let downloadPath = path + ".download"
        defer {
            try? FileManager.default.removeItem(atPath: copyPath)
            try? FileManager.default.removeItem(atPath: downloadPath)
        }
        // Untimed: connections, code paths, the server's directories; and a check that the
        // bytes come back as they went.
        let warm = "warm-\(size)"
        try await client.upload(path, size: Int64(size), checksum: checksum, recordName: warm)
        _ = try await client.download(recordName: warm, to: downloadPath)
        guard try BenchFiles.checksum(of: downloadPath) == checksum else {
            throw BenchError("the downloaded \(size)-byte file differs from the uploaded one")
        }
        try BenchFiles.copy(path, to: copyPath)
        if let peer = settings.nginx {
            try await client.put(path, size: Int64(size), to: peer.url(warm))
            _ = try await client.get(peer.url(warm), size: Int64(size), to: downloadPath)
            guard try BenchFiles.checksum(of: downloadPath) == checksum else {
                throw BenchError("the file nginx served differs from the one it was sent")
            }
        }

        var result = ThroughputResult(size: size, targets: settings.targets)
        let peer = settings.nginx
        let steps = peer == nil ? "copy, upload, download" : "copy, upload and download by Nimbus and nginx"
        let progress = Progress(label: "\(ThroughputResult.sizeLabel(size)): \(steps)", total: settings.repetitions)
        for round in 0..<settings.repetitions {
            let name = "t-\(size)-\(round)"
            // Untimed, so that every timed operation writes a new file, as the server does with
            // a new upload: the round's file gets bytes of its own (the same bytes again would
            // be the blob the server already holds, replaced by the upload: a 50 MB unlink in
            // it), and the copy and the download find no earlier file to truncate.
            let stamped = try BenchFiles.stamp(path, with: UInt64(round) + 1)
            try? FileManager.default.removeItem(atPath: copyPath)
            result.copy.append(try Self.timedSync { _ = try BenchFiles.copy(path, to: copyPath) })
            try? FileManager.default.removeItem(atPath: copyPath)
            result.durableCopy.append(try Self.timedSync { _ = try BenchFiles.copy(path, to: copyPath, durable: true) })
            // Nimbus and nginx take turns going first, round by round.
            let nimbusFirst = round % 2 == 0
            for nimbus in [nimbusFirst, !nimbusFirst] {
                if nimbus {
                    result.upload.append(
                        try await Self.timed { try await client.upload(path, size: Int64(size), checksum: stamped, recordName: name) })
                } else if let peer {
                    result.peerUpload.append(try await Self.timed { try await client.put(path, size: Int64(size), to: peer.url(name)) })
                }
            }
            for nimbus in [nimbusFirst, !nimbusFirst] {
                try? FileManager.default.removeItem(atPath: downloadPath)
                if nimbus {
                    result.download.append(
                        try await Self.timed {
                            let written = try await client.download(recordName: name, to: downloadPath)
                            guard written == size else { throw BenchError("downloaded \(written) of \(size) bytes") }
                        })
                } else if let peer {
                    result.peerDownload.append(
                        try await Self.timed { _ = try await client.get(peer.url(name), size: Int64(size), to: downloadPath) })
                    try? FileManager.default.removeItem(atPath: (peer.root as NSString).appendingPathComponent(name))
                }
            }
            progress.update(round + 1)
        }
        progress.finish()
        return result
    }

    /// Wall-clock and CPU seconds (this whole process: client, and the server when embedded).
    static func timedSync(_ body: () throws -> Void) rethrows -> Timing {
        let cpu = processCPUSeconds()
        let start = ContinuousClock.now
        try body()
        return Timing(seconds: (ContinuousClock.now - start).seconds, cpuSeconds: processCPUSeconds() - cpu)
    }

    static func timed(_ body: () async throws -> Void) async rethrows -> Timing {
        let cpu = processCPUSeconds()
        let start = ContinuousClock.now
        try await body()
        return Timing(seconds: (ContinuousClock.now - start).seconds, cpuSeconds: processCPUSeconds() - cpu)
    }

    // MARK: - Resume

    /// An upload interrupted at half, then resumed from what the server says it holds.
    /// `cutPost`: a `POST` of the whole file whose body stops at half, the connection closed
    /// (``CutUpload``: written to the socket, so every byte counted was sent); else a first
    /// `PUT` chunk of half the file.
    private func resume(_ path: String, size: Int, checksum: String, cutPost: Bool) async throws -> ResumeResult {
        let total = Int64(size)
        let half = total / 2
        let name = cutPost ? "resume-post" : "resume-put"
        let url = try await client.uploadURL(recordName: name)
        let sentBefore: Int64
        if cutPost {
            sentBefore = try await CutUpload.post(path, range: 0..<half, total: total, to: url)
        } else {
            let before = ByteCounter()
            let answer = try await client.send(
                FileChunks(path: path, range: 0..<half, sent: before), to: url, total: total, method: .PUT)
            guard answer.status == 202, answer.receivedBytes == half else {
                throw BenchError("the first half answered \(answer.status): \(answer.json.serialized().prefix(200))")
            }
            sentBefore = before.total
        }

        // Resume: ask what the server holds, send the rest. The status waits for a request
        // still storing bytes of the upload, but a cut POST the server has not even begun to
        // read (its bytes still in the socket) holds nothing yet: ask again then. A 409
        // (another request is sending) means ask again too.
        let after = ByteCounter()
        var held: Int64 = -1
        var singleFile: JSON?
        let start = ContinuousClock.now
        for attempt in 0..<50 {
            let status = try await client.status(of: url)
            if let file = status.singleFile {
                singleFile = file
                break
            }
            guard let received = status.receivedBytes else {
                throw BenchError("the upload status answered \(status.status): \(status.json.serialized().prefix(200))")
            }
            if received == 0, cutPost, attempt < 49 {
                try await Task.sleep(for: .milliseconds(20))
                continue
            }
            held = received
            let answer = try await client.send(
                FileChunks(path: path, range: received..<total, sent: after), to: url, total: total, method: .PUT)
            if answer.status == 409, attempt < 49 {
                try await Task.sleep(for: .milliseconds(100))
                continue
            }
            singleFile = try AssetBenchClient.singleFile(answer, checksum: checksum, size: total)
            break
        }
        let seconds = (ContinuousClock.now - start).seconds
        guard let singleFile else { throw BenchError("the resumed upload never finished") }
        try await client.attach(singleFile, recordName: name)
        // The file the record holds is the file sent.
        let downloadPath = path + ".resumed"
        defer { try? FileManager.default.removeItem(atPath: downloadPath) }
        _ = try await client.download(recordName: name, to: downloadPath)
        guard try BenchFiles.checksum(of: downloadPath) == checksum else {
            throw BenchError("the resumed upload's download differs from the file")
        }
        return ResumeResult(
            cutPost: cutPost, size: size, sentBeforeCut: sentBefore, heldAtResume: held, sentAfterCut: after.total,
            resumeSeconds: seconds)
    }

    // MARK: - Concurrent uploads

    private func concurrent(_ path: String, size: Int, checksum: String) async throws -> ConcurrentResult {
        let clients = settings.clients
        let client = self.client
        // Settle, then measure from here: the peak resident memory starts again at the current one.
        try await Task.sleep(for: .milliseconds(200))
        let peakReset = serverMemory.resetPeak()
        let baseline = serverMemory.read()?.residentBytes ?? 0
        let sampler = MemorySampler(serverMemory)
        let cpu = processCPUSeconds()
        let start = ContinuousClock.now
        let progress = Progress(label: "\(clients) clients uploading \(ThroughputResult.sizeLabel(size)) at once", total: clients)
        let done = Counter()
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<clients {
                    group.addTask {
                        try await client.upload(path, size: Int64(size), checksum: checksum, recordName: "c-\(index)")
                        progress.update(done.add(1))
                    }
                }
                try await group.waitForAll()
            }
        } catch {
            _ = await sampler.stop()
            throw error
        }
        let seconds = (ContinuousClock.now - start).seconds
        let cpuSeconds = processCPUSeconds() - cpu
        let peak = await sampler.stop()
        progress.finish()
        return ConcurrentResult(
            clients: clients, size: size, seconds: seconds, cpuSeconds: cpuSeconds, baselineBytes: baseline,
            peakBytes: peak, afterBytes: serverMemory.read()?.residentBytes ?? 0, peakWasReset: peakReset)
    }
}

/// Wall-clock and CPU seconds of one operation.
struct Timing: Sendable {
    var seconds: Double
    var cpuSeconds: Double
}
