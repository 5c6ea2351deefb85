import Crypto
import Hummingbird
import NIOCore
import NimbusProtocol

/// Counts and hashes a request body on its way to the ``AssetStore`` (the buffers pass on
/// as they are, hashed where they lie), and stops it with `LIMIT_EXCEEDED` at the first
/// buffer past `limit`. Not `Sendable`: it lives in the one task that handles the upload,
/// which iterates the body.
final class BodyMeter {
    let limit: Int64
    private var count: Int64 = 0
    private var hasher = SHA256()

    init(limit: Int64) {
        self.limit = limit
    }

    var digest: [UInt8] { Array(hasher.finalize()) }

    func metered(_ body: RequestBody) -> Metered { Metered(body: body, meter: self) }

    fileprivate func count(_ buffer: ByteBuffer) throws {
        guard Int64(buffer.readableBytes) <= limit - count else {
            throw CloudKitError(.limitExceeded, "the body is longer than \(limit) bytes")
        }
        count += Int64(buffer.readableBytes)
        buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
    }

    /// The body as the meter passes it on.
    struct Metered: AsyncSequence {
        typealias Element = ByteBuffer
        let body: RequestBody
        let meter: BodyMeter

        struct AsyncIterator: AsyncIteratorProtocol {
            var base: RequestBody.AsyncIterator
            let meter: BodyMeter

            mutating func next() async throws -> ByteBuffer? {
                guard let buffer = try await base.next() else { return nil }
                try meter.count(buffer)
                return buffer
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: body.makeAsyncIterator(), meter: meter) }
    }
}
