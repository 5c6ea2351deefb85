import Foundation

/// Carries asset bytes between files and the server: the one seam for uploads and downloads.
///
/// ``HTTPClientTransport`` streams both ways (a file is never held in memory whole). A
/// ``Container`` whose ``Transport`` is not an `AssetTransport` moves asset bytes through
/// ``BufferedAssetTransport``, which reads each request's bytes into memory: fine for test
/// doubles, not for large files.
///
/// Like a ``Transport``, an asset transport returns every HTTP response whatever its status,
/// reports unreachable servers and broken exchanges as ``NimbusError/Code/networkUnavailable``
/// and ``NimbusError/Code/networkFailure``, and stops with `CancellationError` when the
/// calling task is cancelled.
public protocol AssetTransport: Sendable {
    /// Sends `request` with the bytes `range` of `file` as its body, streamed from the file.
    ///
    /// - Parameter progress: called with the number of body bytes sent so far.
    func upload(
        _ request: TransportRequest, file: URL, range: Range<Int64>,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> TransportResponse

    /// Sends `request` and writes a successful response's body to `file` as it arrives: a
    /// `206 Partial Content` body is appended to the file, a `200` body replaces its content.
    /// Any other response is returned with its body, and the file is left as it was.
    ///
    /// - Parameter progress: called with the number of body bytes written so far.
    func download(
        _ request: TransportRequest, into file: URL, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> TransportResponse

    /// Sends `request` with `body` as its body: bytes made as the connection takes them (an
    /// encrypted asset's ciphertext, sealed on the way). The default writes the body to a
    /// temporary file and sends that with ``upload(_:file:range:progress:)``.
    ///
    /// - Parameter progress: called with the number of body bytes sent so far.
    func upload(
        _ request: TransportRequest, body: AssetUploadBody, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> TransportResponse

    /// Sends `request` and hands a `200`/`206` response's body to `receive` (with the status)
    /// piece by piece as it arrives; any other response is returned with its body, and
    /// `receive` is not called. The default downloads into a temporary file with
    /// ``download(_:into:progress:)`` and hands that over.
    func download(
        _ request: TransportRequest, receive: (_ status: Int, _ bytes: Data) async throws -> Void
    ) async throws -> TransportResponse
}

extension AssetTransport {
    public func upload(
        _ request: TransportRequest, body: AssetUploadBody, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> TransportResponse {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-upload-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let writer = try AssetFile.Writer(file, append: false)
        do {
            for try await bytes in body { try writer.write(bytes) }
            writer.close()
        } catch {
            writer.close()
            throw error
        }
        return try await upload(request, file: file, range: 0..<body.length, progress: progress)
    }

    public func download(
        _ request: TransportRequest, receive: (_ status: Int, _ bytes: Data) async throws -> Void
    ) async throws -> TransportResponse {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-download-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let response = try await download(request, into: file, progress: { _ in })
        guard response.status == 200 || response.status == 206 else { return response }
        let size = AssetFile.existingSize(of: file)
        var offset: Int64 = 0
        while offset < size {
            let piece = try AssetFile.read(file, range: offset..<min(size, offset + (1 << 20)))
            offset += Int64(piece.count)
            try await receive(response.status, piece)
        }
        return response
    }
}

/// The body of an upload made as it is sent (``AssetTransport/upload(_:body:progress:)``):
/// `length` bytes, produced a piece at a time; each iteration starts from the beginning.
public struct AssetUploadBody: AsyncSequence, Sendable {
    public typealias Element = Data
    /// How many bytes the body has in all.
    public let length: Int64
    let makeSource: @Sendable () -> any AssetBodySource

    init(length: Int64, makeSource: @escaping @Sendable () -> any AssetBodySource) {
        self.length = length
        self.makeSource = makeSource
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(source: makeSource()) }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let source: any AssetBodySource

        public mutating func next() async throws -> Data? { try await source.next() }
    }
}

/// What makes an ``AssetUploadBody``'s bytes: one iteration's state.
protocol AssetBodySource: AnyObject {
    /// The next piece, or `nil` after the last.
    func next() async throws -> Data?
}

/// Moves asset bytes through a plain ``Transport``, each request's body in memory.
public struct BufferedAssetTransport: AssetTransport {
    public let transport: any Transport

    public init(_ transport: any Transport) {
        self.transport = transport
    }

    public func upload(
        _ request: TransportRequest, file: URL, range: Range<Int64>, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> TransportResponse {
        var request = request
        request.body = try AssetFile.read(file, range: range)
        let response = try await transport.send(request)
        progress(range.upperBound - range.lowerBound)
        return response
    }

    public func download(
        _ request: TransportRequest, into file: URL, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> TransportResponse {
        let response = try await transport.send(request)
        guard response.status == 200 || response.status == 206 else { return response }
        let writer = try AssetFile.Writer(file, append: response.status == 206)
        defer { writer.close() }
        try writer.write(response.body)
        progress(Int64(response.body.count))
        return TransportResponse(status: response.status, headers: response.headers)
    }
}

/// Reading and writing asset files.
enum AssetFile {
    /// The file's length, or ``NimbusError/Code/assetFileNotFound``.
    static func size(of file: URL) throws -> Int64 {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: file.path),
            let size = (attributes[.size] as? NSNumber)?.int64Value
        else {
            throw NimbusError(
                .assetFileNotFound, "the asset's file \(file.path) does not exist or cannot be read; "
                    + "keep the file in place until the record is saved")
        }
        return size
    }

    /// The length of a file that may not exist (0 then).
    static func existingSize(of file: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? NSNumber)?.int64Value ?? 0
    }

    static func read(_ file: URL, range: Range<Int64>) throws -> Data {
        var data = Data()
        try chunks(of: file, range: range) { data.append($0) }
        return data
    }

    /// Reads `range` of `file` in chunks of at most `chunkSize` bytes.
    static func chunks(of file: URL, range: Range<Int64>, chunkSize: Int = 256 << 10, _ body: (Data) throws -> Void) throws {
        guard let handle = try? FileHandle(forReadingFrom: file) else {
            throw NimbusError(.assetFileNotFound, "the asset's file \(file.path) cannot be opened for reading")
        }
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(range.lowerBound))
        var remaining = range.upperBound - range.lowerBound
        while remaining > 0 {
            let chunk = try handle.read(upToCount: Int(min(Int64(chunkSize), remaining))) ?? Data()
            guard !chunk.isEmpty else {
                throw NimbusError(
                    .assetFileModified, "the asset's file \(file.path) became shorter while it was read; save the record again")
            }
            remaining -= Int64(chunk.count)
            try body(chunk)
        }
    }

    /// Writes a download's bytes to a file, appending or from an empty file.
    final class Writer {
        private let handle: FileHandle

        init(_ file: URL, append: Bool) throws {
            let manager = FileManager.default
            try? manager.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            if !append || !manager.fileExists(atPath: file.path) {
                guard manager.createFile(atPath: file.path, contents: nil) else {
                    throw NimbusError(.invalidArguments, "cannot create the file \(file.path)")
                }
            }
            handle = try FileHandle(forWritingTo: file)
            if append { try handle.seekToEnd() }
        }

        func write(_ data: some DataProtocol) throws {
            try handle.write(contentsOf: data)
        }

        /// Cuts the file to its first `length` bytes and writes on from there.
        func truncate(at length: Int64) throws {
            try handle.truncate(atOffset: UInt64(length))
            try handle.seekToEnd()
        }

        func close() {
            try? handle.close()
        }
    }
}
