import Foundation
import NimbusProtocol

/// One file size's rounds: copy, upload and download times, Nimbus's and nginx's.
struct ThroughputResult: Sendable {
    var size: Int
    /// A reference: a copy on the same disk, no fsync.
    var copy: [Timing] = []
    /// A reference: the same copy fsynced, as the server stores an upload before answering.
    var durableCopy: [Timing] = []
    var upload: [Timing] = []
    var download: [Timing] = []
    /// The yardstick (``NginxPeer``): nginx accepting the same file by `PUT` and serving it by
    /// `GET`, in the same rounds, through the same client. Empty with `--no-nginx`.
    var peerUpload: [Timing] = []
    var peerDownload: [Timing] = []
    /// The targets, as fractions of nginx's median rate (``AssetBenchTargets``).
    var targets: AssetBenchTargets?

    /// Judged on 50 MB files, against nginx.
    var hasTarget: Bool { size == 50_000_000 && targets != nil && !peerUpload.isEmpty }

    /// MB/s (10⁶ bytes per second) of the fastest and of the median round.
    func rates(_ timings: [Timing]) -> (best: Double, median: Double) {
        let seconds = timings.map(\.seconds).sorted()
        guard let fastest = seconds.first else { return (0, 0) }
        let middle = seconds.count % 2 == 1
            ? seconds[seconds.count / 2] : (seconds[seconds.count / 2 - 1] + seconds[seconds.count / 2]) / 2
        let megabytes = Double(size) / 1e6
        return (megabytes / fastest, megabytes / middle)
    }

    /// The rate of `timings` as a fraction of `yardstick`'s: best against best, median against median.
    func ratios(_ timings: [Timing], to yardstick: [Timing]) -> (best: Double, median: Double) {
        let reference = rates(yardstick)
        let rate = rates(timings)
        return (reference.best > 0 ? rate.best / reference.best : 0, reference.median > 0 ? rate.median / reference.median : 0)
    }

    /// The median CPU seconds (client and embedded server) of one operation.
    func cpu(_ timings: [Timing]) -> Double {
        let sorted = timings.map(\.cpuSeconds).sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    /// Judged on the medians (the rounds alternate who goes first).
    var uploadMet: Bool { targets.map { ratios(upload, to: peerUpload).median >= $0.upload } ?? true }
    var downloadMet: Bool { targets.map { ratios(download, to: peerDownload).median >= $0.download } ?? true }
    var targetMet: Bool { uploadMet && downloadMet }

    static func sizeLabel(_ size: Int) -> String {
        size % 1_000_000 == 0 ? "\(size / 1_000_000) MB" : String(format: "%.2f MB", Double(size) / 1e6)
    }

    var lines: [String] {
        func f(_ value: Double, _ decimals: Int = 0) -> String { String(format: "%.\(decimals)f", value) }
        let copy = rates(copy)
        let durable = rates(durableCopy)
        var lines = [
            "\(Self.sizeLabel(size)) × \(self.copy.count): copy \(f(copy.best)) MB/s best, \(f(copy.median)) median "
                + "(cpu \(f(cpu(self.copy), 3)) s); copy + fsync \(f(durable.best)) best, \(f(durable.median)) median"
        ]
        let rows: [(String, [Timing], [Timing], Double?)] = [
            ("upload", upload, peerUpload, targets?.upload), ("download", download, peerDownload, targets?.download),
        ]
        for (label, timings, peer, target) in rows {
            let rate = rates(timings)
            let toCopy = ratios(timings, to: self.copy)
            var line =
                "    \(label.padding(toLength: 8, withPad: " ", startingAt: 0)) \(f(rate.best)) MB/s best, \(f(rate.median)) median "
                + "= \(f(toCopy.median * 100)) % of copy (cpu \(f(cpu(timings), 3)) s)"
            if !peer.isEmpty {
                let peerRate = rates(peer)
                let toPeer = ratios(timings, to: peer)
                line += "; nginx \(f(peerRate.best)) best, \(f(peerRate.median)) median (cpu \(f(cpu(peer), 3)) s) → Nimbus at "
                    + "\(f(toPeer.median * 100)) % of nginx (median), \(f(toPeer.best * 100)) % (best)"
                if hasTarget, let target {
                    line += "  [target ≥ \(Int(target * 100)) %: \(toPeer.median >= target ? "met" : "MISSED")]"
                }
            }
            lines.append(line)
        }
        return lines
    }

    var json: JSON {
        func rateJSON(_ timings: [Timing], peer: [Timing]? = nil) -> JSON {
            let rate = rates(timings)
            let ratio = ratios(timings, to: copy)
            var members: [String: JSON] = [
                "bestMBps": .double(rate.best), "medianMBps": .double(rate.median),
                "bestRatioToCopy": .double(ratio.best), "medianRatioToCopy": .double(ratio.median),
                "medianCPUSeconds": .double(cpu(timings)),
                "seconds": .array(timings.map { .double($0.seconds) }),
            ]
            if let peer, !peer.isEmpty {
                let toPeer = ratios(timings, to: peer)
                members["bestRatioToNginx"] = .double(toPeer.best)
                members["medianRatioToNginx"] = .double(toPeer.median)
            }
            return .object(members)
        }
        var members: [String: JSON] = [
            "bytes": .int(size), "rounds": .int(copy.count), "copy": rateJSON(copy), "copyFsync": rateJSON(durableCopy),
            "upload": rateJSON(upload, peer: peerUpload), "download": rateJSON(download, peer: peerDownload),
        ]
        if !peerUpload.isEmpty {
            members["nginxUpload"] = rateJSON(peerUpload)
            members["nginxDownload"] = rateJSON(peerDownload)
        }
        if hasTarget, let targets {
            members["targets"] = ["upload": .double(targets.upload), "download": .double(targets.download)]
            members["targetMet"] = .bool(targetMet)
        }
        return .object(members)
    }
}

/// Nimbus's targets against nginx (issue 40, part 4), as fractions of nginx's median rate.
struct AssetBenchTargets: Sendable {
    var upload: Double
    var download: Double

    /// Asset bytes in files (SQLite's directory, a shared directory, an object store): downloads
    /// ≥ 90 % of nginx, uploads ≥ 60 %.
    static let files = AssetBenchTargets(upload: 0.60, download: 0.90)
    /// PostgreSQL's in-database chunks, the zero-configuration default: ≥ 30 % both ways.
    static let inDatabase = AssetBenchTargets(upload: 0.30, download: 0.30)
}

/// An upload interrupted at half and resumed.
struct ResumeResult: Sendable {
    /// A `POST` cut mid-way, or a first `PUT` chunk of half the file.
    var cutPost: Bool
    var size: Int
    /// What the client handed its HTTP connection before the interruption.
    var sentBeforeCut: Int64
    /// What the server said it held (`receivedBytes`) when asked afterwards.
    var heldAtResume: Int64
    /// What the client sent after the interruption.
    var sentAfterCut: Int64
    var resumeSeconds: Double

    /// The stated target: the resume sends at most 55 % of the file again.
    static let targetFraction = 0.55
    var resentFraction: Double { Double(sentAfterCut) / Double(size) }
    var totalFraction: Double { Double(sentBeforeCut + sentAfterCut) / Double(size) }
    var targetMet: Bool { resentFraction <= Self.targetFraction }

    var line: String {
        func mb(_ bytes: Int64) -> String { String(format: "%.2f MB", Double(bytes) / 1e6) }
        let how = cutPost ? "a POST cut at half" : "a first PUT of half"
        return "resumed \(ThroughputResult.sizeLabel(size)) upload, \(how): \(mb(sentBeforeCut)) sent before, the server "
            + "held \(mb(heldAtResume)), the resume sent \(mb(sentAfterCut)) = \(String(format: "%.1f", resentFraction * 100)) % "
            + "of the file (\(String(format: "%.3f", totalFraction)) × in all, \(String(format: "%.2f", resumeSeconds)) s)"
            + "  [target ≤ \(Int(Self.targetFraction * 100)) %: \(targetMet ? "met" : "MISSED")]"
    }

    var json: JSON {
        [
            "interruption": .string(cutPost ? "post-cut" : "put-half"), "bytes": .int(size),
            "sentBeforeCut": .int(sentBeforeCut), "heldAtResume": .int(heldAtResume), "sentAfterCut": .int(sentAfterCut),
            "resentFraction": .double(resentFraction), "totalFraction": .double(totalFraction),
            "resumeSeconds": .double(resumeSeconds), "targetMet": .bool(targetMet),
        ]
    }
}

/// Many uploads at once, with the server's resident memory.
struct ConcurrentResult: Sendable {
    var clients: Int
    var size: Int
    var seconds: Double
    var cpuSeconds: Double
    /// Resident bytes just before the uploads.
    var baselineBytes: Int64
    /// The highest resident bytes during them (sampled, and the kernel's peak).
    var peakBytes: Int64
    var afterBytes: Int64
    /// Whether the kernel's peak was restarted at the baseline (else it is the process's
    /// lifetime peak, which may predate the run).
    var peakWasReset: Bool

    var growthBytes: Int64 { max(0, peakBytes - baselineBytes) }
    /// The bytes of all the files together: what a server holding each file whole would need.
    var wholeFilesBytes: Int64 { Int64(clients) * Int64(size) }
    /// Bounded: the growth is below one tenth of the files together (a server holding files
    /// whole would grow by all of them).
    var bounded: Bool { growthBytes * 10 < wholeFilesBytes }

    var line: String {
        func mb(_ bytes: Int64) -> String { String(format: "%.0f MB", Double(bytes) / 1e6) }
        let rate = Double(wholeFilesBytes) / 1e6 / seconds
        return "\(clients) clients × \(ThroughputResult.sizeLabel(size)) uploaded at once: \(String(format: "%.2f", seconds)) s, "
            + "\(String(format: "%.0f", rate)) MB/s in all, cpu \(String(format: "%.2f", cpuSeconds)) s; resident memory "
            + "\(mb(baselineBytes)) before, peak \(mb(peakBytes)) (+\(mb(growthBytes)) = "
            + "\(String(format: "%.1f", Double(growthBytes) / 1e6 / Double(clients))) MB per upload, "
            + "\(String(format: "%.1f", Double(growthBytes) * 100 / Double(wholeFilesBytes))) % of the \(mb(wholeFilesBytes)) sent), "
            + "\(mb(afterBytes)) after\(peakWasReset ? "" : " (peak: the process's lifetime VmHWM)")"
            + "  [bounded, growth < 10 % of the files: \(bounded ? "met" : "MISSED")]"
    }

    var json: JSON {
        [
            "clients": .int(clients), "bytesEach": .int(size), "seconds": .double(seconds), "cpuSeconds": .double(cpuSeconds),
            "MBps": .double(Double(wholeFilesBytes) / 1e6 / seconds), "baselineResidentBytes": .int(baselineBytes),
            "peakResidentBytes": .int(peakBytes), "afterResidentBytes": .int(afterBytes), "growthBytes": .int(growthBytes),
            "peakWasReset": .bool(peakWasReset), "bounded": .bool(bounded),
        ]
    }
}
