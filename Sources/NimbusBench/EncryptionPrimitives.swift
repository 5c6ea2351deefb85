import Crypto
import Foundation
import NimbusCrypto

/// The raw speed of what an encrypted upload pays per byte, measured in this process (so in
/// the BoringSSL build the SDK links, with whatever CPU paths it picks): SHA-256, HMAC-SHA256
/// and AES-256-GCM over a file's worth of 256 KiB chunks, a version 3 chunk's key (its
/// AES-GCM-SIV tag, then the HMAC of that), a chunk sealed whole in version 3 and in version 2
/// (its key's HMAC of the chunk, then AES-GCM), and a plain copy of the same bytes for scale.
enum EncryptionPrimitives {
    struct Speed {
        var name: String
        /// The best of three passes, in seconds.
        var seconds: Double
    }

    /// Each primitive over `bytes` bytes, best of three passes.
    static func measure(bytes: Int) throws -> [Speed] {
        let chunkSize = AssetChunks.defaultChunkSize
        let data = pseudoRandom(bytes)
        let chunks = stride(from: 0, to: bytes, by: chunkSize).map { data[$0..<min(bytes, $0 + chunkSize)] }
        let key = SymmetricKey(size: .bits256)
        let zoneKey = ZoneKey()
        let secrets = AssetChunks.Secrets(zoneKey: zoneKey)
        let secretsV2 = AssetChunks.Secrets(zoneKey: zoneKey, version: 2)
        let nonce = AES.GCM.Nonce()
        let boxes = try chunks.map { try AES.GCM.seal($0, using: key, nonce: nonce) }
        var sink = 0
        func best(_ name: String, _ pass: () throws -> Void) rethrows -> Speed {
            var times: [Double] = []
            for _ in 0..<3 {
                let start = ContinuousClock.now
                try pass()
                times.append((ContinuousClock.now - start) / .seconds(1))
            }
            return Speed(name: name, seconds: times.min()!)
        }
        let speeds = [
            best("copy") { for chunk in chunks { sink &+= Array(chunk).count } },
            best("SHA-256") { for chunk in chunks { sink &+= SHA256.hash(data: chunk).withUnsafeBytes { Int($0[0]) } } },
            best("HMAC-SHA256") {
                for chunk in chunks { sink &+= HMAC<SHA256>.authenticationCode(for: chunk, using: key).withUnsafeBytes { Int($0[0]) } }
            },
            try best("AES-256-GCM seal") {
                for chunk in chunks { sink &+= try AES.GCM.seal(chunk, using: key, nonce: nonce).tag.count }
            },
            try best("AES-256-GCM open") { for box in boxes { sink &+= try AES.GCM.open(box, using: key).count } },
            best("chunk key (v3: GCM-SIV tag)") {
                for (index, chunk) in chunks.enumerated() {
                    sink &+= Int(
                        AssetChunks.chunkKey(
                            chunk, index: index, final: index == chunks.count - 1, chunkSize: chunkSize, secrets: secrets)[0])
                }
            },
            try best("chunk seal (v3)") {
                for (index, chunk) in chunks.enumerated() {
                    sink &+= try AssetChunks.sealChunk(
                        chunk, index: index, final: index == chunks.count - 1, chunkSize: chunkSize, secrets: secrets
                    ).sealed.count
                }
            },
            try best("chunk seal (v2)") {
                for (index, chunk) in chunks.enumerated() {
                    sink &+= try AssetChunks.sealChunk(
                        chunk, index: index, final: index == chunks.count - 1, chunkSize: chunkSize, secrets: secretsV2
                    ).sealed.count
                }
            },
        ]
        precondition(sink != 0)
        return speeds
    }

    /// The printed line: each primitive's time for `bytes` bytes and its rate.
    static func report(_ speeds: [Speed], bytes: Int) -> String {
        speeds.map { speed in
            speed.name + String(format: " %.1f ms (%.2f GB/s)", speed.seconds * 1000, Double(bytes) / speed.seconds / 1e9)
        }.joined(separator: "; ")
    }

    private static func pseudoRandom(_ count: Int) -> Data {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { EncryptionAssetBench.fill($0, state: &state) }
        return Data(bytes)
    }
}
