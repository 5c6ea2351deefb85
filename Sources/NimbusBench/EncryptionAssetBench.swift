import Foundation
import Nimbus

/// The asset half of `nimbus-bench encryption`: one large file saved (upload + record save)
/// and downloaded, through the SDK with its streaming transport, by a device whose container
/// encrypts assets and by the same user's container without keys (plain), in alternating
/// order each round.
struct EncryptionAssetBench {
    let bytes: Int
    let rounds: Int
    let directory: URL

    struct Timings {
        var upload: [EncryptionBenchCommand.Mode: [Double]] = [:]
        var download: [EncryptionBenchCommand.Mode: [Double]] = [:]
        /// The process's CPU seconds (user and system, client and server) during each upload.
        var uploadCPU: [EncryptionBenchCommand.Mode: [Double]] = [:]
    }

    /// Seconds per save and per download, each mode, each round.
    func run(encrypted: Database, plain: Database, zone: ZoneID) async throws -> Timings {
        var timings = Timings()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for round in 0..<rounds {
            // A file of its own each round (the server deduplicates same bytes), the same for both modes.
            let file = directory.appendingPathComponent("asset-\(round).bin")
            try Self.write(bytes, seed: UInt64(round + 1), to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            for mode in round % 2 == 0 ? [EncryptionBenchCommand.Mode.plain, .encrypted] : [.encrypted, .plain] {
                let database = mode == .plain ? plain : encrypted
                var record = Record(
                    recordType: "BenchFile", recordID: Record.ID(recordName: "file-\(mode)-\(round)", zoneID: zone))
                record["file"] = Asset(fileURL: file)
                let (start, cpu) = (ContinuousClock.now, processCPUSeconds())
                let saved = try await database.save(record)
                timings.upload[mode, default: []].append((ContinuousClock.now - start) / .seconds(1))
                timings.uploadCPU[mode, default: []].append(processCPUSeconds() - cpu)
                guard let asset = saved["file"] as Asset?, asset.isEncrypted == (mode == .encrypted) else {
                    throw NimbusError(.internalError, "the \(mode) save answered no asset of its kind")
                }
                let target = directory.appendingPathComponent("download-\(mode)-\(round).bin")
                let started = ContinuousClock.now
                try await database.download(asset, to: target)
                timings.download[mode, default: []].append((ContinuousClock.now - started) / .seconds(1))
                guard (try FileManager.default.attributesOfItem(atPath: target.path)[.size] as? NSNumber)?.intValue == bytes else {
                    throw NimbusError(.internalError, "the \(mode) download has the wrong length")
                }
                try FileManager.default.removeItem(at: target)
            }
        }
        return timings
    }

    /// Fills `raw` with the xorshift stream that continues from `state` (whole 8-byte words;
    /// a shorter tail stays as it was).
    static func fill(_ raw: UnsafeMutableRawBufferPointer, state: inout UInt64) {
        for index in stride(from: 0, to: raw.count - raw.count % 8, by: 8) {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            raw.storeBytes(of: state, toByteOffset: index, as: UInt64.self)
        }
    }

    /// `count` bytes of a xorshift stream (incompressible, different for each seed), written in 1 MiB pieces.
    static func write(_ count: Int, seed: UInt64, to file: URL) throws {
        FileManager.default.createFile(atPath: file.path, contents: nil)
        let handle = try FileHandle(forWritingTo: file)
        defer { try? handle.close() }
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        var written = 0
        while written < count {
            let piece = min(1 << 20, count - written)
            var buffer = [UInt8](repeating: 0, count: piece)
            buffer.withUnsafeMutableBytes { fill($0, state: &state) }
            try handle.write(contentsOf: buffer)
            written += piece
        }
    }
}
