import Foundation
import NIOConcurrencyHelpers

/// Resident memory of a process from `/proc/PID/status` (Linux): `VmRSS` now and `VmHWM`,
/// the peak since the process started or since ``resetPeak()``.
struct ProcessMemory: Sendable {
    /// `self` or a process id.
    var process = "self"

    struct Reading: Sendable {
        var residentBytes: Int64
        var peakBytes: Int64
    }

    /// `nil` where `/proc` is missing (not Linux).
    func read() -> Reading? {
        guard let status = try? String(contentsOfFile: "/proc/\(process)/status", encoding: .utf8) else { return nil }
        var rss: Int64?
        var hwm: Int64?
        for line in status.split(separator: "\n") {
            if line.hasPrefix("VmRSS:") { rss = Self.kilobytes(line) }
            if line.hasPrefix("VmHWM:") { hwm = Self.kilobytes(line) }
        }
        guard let rss, let hwm else { return nil }
        return Reading(residentBytes: rss * 1024, peakBytes: hwm * 1024)
    }

    /// Starts `VmHWM` again from the current `VmRSS` (writing 5 to `/proc/PID/clear_refs`,
    /// Linux ≥ 4.0). False when the kernel refused.
    @discardableResult
    func resetPeak() -> Bool {
        guard let handle = FileHandle(forWritingAtPath: "/proc/\(process)/clear_refs") else { return false }
        defer { try? handle.close() }
        return (try? handle.write(contentsOf: Data("5".utf8))) != nil
    }

    private static func kilobytes(_ line: Substring) -> Int64? {
        line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int64($0) }
    }
}

/// Samples a process's resident memory every `interval` until stopped: the highest `VmRSS`
/// seen, and `VmHWM` at the end (the kernel's own peak, which a sample can miss).
final class MemorySampler: Sendable {
    let memory: ProcessMemory
    private let highest = NIOLockedValueBox<Int64>(0)
    private let task: NIOLockedValueBox<Task<Void, Never>?> = NIOLockedValueBox(nil)

    init(_ memory: ProcessMemory, interval: Duration = .milliseconds(20)) {
        self.memory = memory
        let highest = self.highest
        task.withLockedValue {
            $0 = Task {
                while !Task.isCancelled {
                    if let reading = memory.read() {
                        highest.withLockedValue { $0 = max($0, reading.residentBytes) }
                    }
                    try? await Task.sleep(for: interval)
                }
            }
        }
    }

    /// Stops sampling; the peak resident bytes (the larger of the samples and `VmHWM`).
    func stop() async -> Int64 {
        let running = task.withLockedValue { task -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }
        running?.cancel()
        await running?.value
        let kernelPeak = memory.read()?.peakBytes ?? 0
        return max(kernelPeak, highest.withLockedValue { $0 })
    }
}
