import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Fresh random 96-bit AES-GCM nonces for a batch of sealings, read from the operating
/// system's random source 21 at a time: one `getentropy` call of 252 bytes where
/// `AES.GCM.Nonce()` makes two system calls per nonce (on Linux). Every nonce is still 12 bytes the
/// operating system drew at random for it, none used twice; only the reads are fewer.
///
/// Made for one batch and dropped after it (never kept across a `fork`, which would copy the
/// unused nonces into two processes):
///
/// ```swift
/// var nonces = RandomNonces()
/// let envelopes = try values.map { try FieldSealing.sealedData($0, with: key, for: place, nonces: &nonces) }
/// ```
public struct RandomNonces {
    private static let nonceByteCount = 12
    /// The most `getentropy` hands over in one call.
    private static let poolByteCount = 252
    private var pool = [UInt8](repeating: 0, count: poolByteCount)
    private var used = poolByteCount

    public init() {}

    /// The next nonce.
    public mutating func next() -> AES.GCM.Nonce {
        if used == pool.count {
            Self.fill(&pool)
            used = 0
        }
        defer { used += Self.nonceByteCount }
        do {
            return try AES.GCM.Nonce(data: pool[used..<used + Self.nonceByteCount])
        } catch {
            preconditionFailure("a 12-byte AES-GCM nonce was refused: \(error)")
        }
    }

    /// `bytes` drawn at random by the operating system (on Apple platforms by
    /// `arc4random_buf`, the source the standard library's `SystemRandomNumberGenerator` uses
    /// there).
    private static func fill(_ bytes: inout [UInt8]) {
        #if canImport(Glibc) || canImport(Musl)
        let status = bytes.withUnsafeMutableBytes { getentropy($0.baseAddress, $0.count) }
        // getentropy fails only for more than 256 bytes or a bad address; neither can happen.
        precondition(status == 0, "getentropy failed (errno \(errno))")
        #elseif canImport(Darwin)
        bytes.withUnsafeMutableBytes { arc4random_buf($0.baseAddress, $0.count) }
        #else
        var generator = SystemRandomNumberGenerator()
        for index in bytes.indices { bytes[index] = generator.next() }
        #endif
    }
}
