import Foundation
import NimbusProtocol

/// One file size's rounds: copy, upload and download times.
struct ThroughputResult: Sendable {
    var size: Int
    /// The yardstick: a copy on the same disk, no fsync.
    var copy: [Timing] = []
    /// A reference: the same copy fsynced, as the server stores an upload before answering.
    var durableCopy: [Timing] = []
    var upload: [Timing] = []
    var download: [Timing] = []

    /// The stated target: 70 % of the copy rate, both directions, for the 50 MB file.
    static let targetRatio = 0.70
    var hasTarget: Bool { size == 50_000_000 }

    /// MB/s (10⁶ bytes per second) of the fastest and of the median round.
    func rates(_ timings: [Timing]) -> (best: Double, median: Double) {
        let seconds = timings.map(\.seconds).sorted()
        guard let fastest = seconds.first else { return (0, 0) }
        let middle = seconds.count % 2 == 1
            ? seconds[seconds.count / 2] : (seconds[seconds.count / 2 - 1] + seconds[seconds.count / 2]) / 2
        let megabytes = Double(size) / 1e6
        return (megabytes / fastest, megabytes / middle)
    }

    /// Upload or download rate as a fraction of the copy rate: best against best, median
    /// against median.
    func ratios(_ timings: [Timing]) -> (best: Double, median: Double) {
        let copy = rates(copy)
        let rate = rates(timings)
        return (copy.best > 0 ? rate.best / copy.best : 0, copy.median > 0 ? rate.median / copy.median : 0)
    }

    /// The median CPU seconds (client and embedded server) of one operation.
    func cpu(_ timings: [Timing]) -> Double {
        let sorted = timings.map(\.cpuSeconds).sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    /// Judged on the best round of each (the round least disturbed by the rest of the machine).
    var targetMet: Bool { ratios(upload).best >= Self.targetRatio && ratios(download).best >= Self.targetRatio }

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
        for (label, timings) in [("upload", upload), ("download", download)] {
            let rate = rates(timings)
            let ratio = ratios(timings)
            var line =
                "    \(label.padding(toLength: 8, withPad: " ", startingAt: 0)) \(f(rate.best)) MB/s best = "
                + "\(f(ratio.best * 100)) % of copy, \(f(rate.median)) median = \(f(ratio.median * 100)) % "
                + "(cpu \(f(cpu(timings), 3)) s)"
            if hasTarget {
                line += "  [target ≥ \(Int(Self.targetRatio * 100)) %: \(ratio.best >= Self.targetRatio ? "met" : "MISSED")]"
            }
            lines.append(line)
        }
        return lines
    }

    var json: JSON {
        func rateJSON(_ timings: [Timing]) -> JSON {
            let rate = rates(timings)
            let ratio = ratios(timings)
            return [
                "bestMBps": .double(rate.best), "medianMBps": .double(rate.median),
                "bestRatioToCopy": .double(ratio.best), "medianRatioToCopy": .double(ratio.median),
                "medianCPUSeconds": .double(cpu(timings)),
                "seconds": .array(timings.map { .double($0.seconds) }),
            ]
        }
        var members: [String: JSON] = [
            "bytes": .int(size), "rounds": .int(copy.count), "copy": rateJSON(copy), "copyFsync": rateJSON(durableCopy),
            "upload": rateJSON(upload),
            "download": rateJSON(download),
        ]
        if hasTarget { members["targetMet"] = .bool(targetMet) }
        return .object(members)
    }
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
