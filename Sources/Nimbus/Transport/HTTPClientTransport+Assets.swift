import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

extension HTTPClientTransport: AssetTransport {
    /// Streams the file's bytes as the request body, a chunk at a time as the connection
    /// takes them (the file is never in memory whole).
    public func upload(
        _ request: TransportRequest, file: URL, range: Range<Int64>, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> TransportResponse {
        // Fails early (assetFileNotFound) rather than inside the body stream.
        guard FileManager.default.isReadableFile(atPath: file.path) else {
            throw NimbusError(.assetFileNotFound, "the asset's file \(file.path) does not exist or cannot be read")
        }
        let chunks = FileChunks(file: file, range: range, progress: progress)
        return try await send(request, body: .stream(chunks, length: .known(range.upperBound - range.lowerBound)))
    }

    /// Streams `body` as the request body, a piece at a time as the connection takes it.
    public func upload(
        _ request: TransportRequest, body: AssetUploadBody, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> TransportResponse {
        try await send(request, body: .stream(UploadBodyBuffers(body: body, progress: progress), length: .known(body.length)))
    }

    /// Sends `request` with a streamed `body` and collects the (short) answer.
    private func send(_ request: TransportRequest, body: HTTPClientRequest.Body) async throws -> TransportResponse {
        var httpRequest = makeRequest(request)
        httpRequest.body = body
        do {
            let response = try await client.execute(httpRequest, timeout: Self.timeAmount(request.timeout))
            let answer = try await response.body.collect(upTo: 1 << 20)
            return TransportResponse(status: Int(response.status.code), headers: Self.headers(response), body: Data(answer.readableBytesView))
        } catch let error as NimbusError {
            throw error
        } catch {
            throw Self.map(error)
        }
    }

    /// Hands a `200`/`206` body to `receive` buffer by buffer as it arrives.
    public func download(
        _ request: TransportRequest, receive: (_ status: Int, _ bytes: Data) async throws -> Void
    ) async throws -> TransportResponse {
        do {
            let response = try await client.execute(makeRequest(request), timeout: Self.timeAmount(request.timeout))
            let status = Int(response.status.code)
            guard status == 200 || status == 206 else {
                let body = try await response.body.collect(upTo: 1 << 20)
                return TransportResponse(status: status, headers: Self.headers(response), body: Data(body.readableBytesView))
            }
            for try await buffer in response.body { try await receive(status, Data(buffer.readableBytesView)) }
            return TransportResponse(status: status, headers: Self.headers(response))
        } catch let error as NimbusError {
            throw error
        } catch {
            throw Self.map(error)
        }
    }

    /// Writes a `200`/`206` body to the file buffer by buffer as it arrives.
    public func download(
        _ request: TransportRequest, into file: URL, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> TransportResponse {
        var writer: AssetFile.Writer?
        defer { writer?.close() }
        var written: Int64 = 0
        let response = try await download(request) { status, bytes in
            if writer == nil { writer = try AssetFile.Writer(file, append: status == 206) }
            try writer?.write(bytes)
            written += Int64(bytes.count)
            progress(written)
        }
        // An empty body still makes (or, for a 200, empties) the file.
        if writer == nil, response.status == 200 || response.status == 206 {
            writer = try AssetFile.Writer(file, append: response.status == 206)
        }
        return response
    }
}

/// A file's bytes in `range`, read a chunk at a time as the HTTP client asks for them.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let file: URL
    let range: Range<Int64>
    let progress: @Sendable (Int64) -> Void
    var chunkSize = 256 << 10

    func makeAsyncIterator() -> Iterator {
        Iterator(chunks: self)
    }

    struct Iterator: AsyncIteratorProtocol {
        let chunks: FileChunks
        var handle: FileHandle?
        var sent: Int64 = 0

        init(chunks: FileChunks) {
            self.chunks = chunks
        }

        mutating func next() async throws -> ByteBuffer? {
            let total = chunks.range.upperBound - chunks.range.lowerBound
            guard sent < total else {
                try? handle?.close()
                handle = nil
                return nil
            }
            try Task.checkCancellation()
            if handle == nil {
                guard let opened = try? FileHandle(forReadingFrom: chunks.file) else {
                    throw NimbusError(.assetFileNotFound, "the asset's file \(chunks.file.path) cannot be opened")
                }
                try opened.seek(toOffset: UInt64(chunks.range.lowerBound))
                handle = opened
            }
            let data = try handle?.read(upToCount: Int(Swift.min(Int64(chunks.chunkSize), total - sent))) ?? Data()
            guard !data.isEmpty else {
                throw NimbusError(
                    .assetFileModified, "the asset's file \(chunks.file.path) became shorter while it was uploaded; save again")
            }
            sent += Int64(data.count)
            chunks.progress(sent)
            return ByteBuffer(bytes: data)
        }
    }
}

/// An ``AssetUploadBody`` as the HTTP client's buffers.
struct UploadBodyBuffers: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let body: AssetUploadBody
    let progress: @Sendable (Int64) -> Void

    func makeAsyncIterator() -> Iterator { Iterator(base: body.makeAsyncIterator(), progress: progress) }

    struct Iterator: AsyncIteratorProtocol {
        var base: AssetUploadBody.AsyncIterator
        let progress: @Sendable (Int64) -> Void
        var sent: Int64 = 0

        mutating func next() async throws -> ByteBuffer? {
            try Task.checkCancellation()
            guard let bytes = try await base.next() else { return nil }
            sent += Int64(bytes.count)
            progress(sent)
            return ByteBuffer(bytes: bytes)
        }
    }
}
