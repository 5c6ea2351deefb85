import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NimbusProtocol
import NimbusStore

/// The asset URLs' HTTP side: bytes in (an upload URL), bytes out (a download URL).
///
/// Uploads stream: each buffer of the request body goes to the ``AssetStore`` as it
/// arrives, through a SHA-256 and a byte count that stops the upload with `LIMIT_EXCEEDED`
/// as soon as it passes ``AssetSettings/maxAssetBytes``. Downloads stream the blob in
/// chunks. Neither holds a file in memory.
struct AssetTransfer: Sendable {
    let metadata: any AssetMetadataStore
    let bytes: any AssetStore
    let links: AssetLinks
    let settings: AssetSettings
    /// Where bytes uploaded and downloaded and unexpected errors are counted (`nil`: metrics off).
    var metrics: ServerMetrics? = nil
    /// Refuses a file the database has no room for before reading it (`nil`: no quotas).
    var quota: UploadQuota? = nil
    /// Uploads this node is writing now: a second request for one of them is refused.
    let writing = NIOLockedValueBox(Set<String>())

    // MARK: - Upload

    /// `POST` (CloudKit: the whole file) or `PUT` with `Content-Range` (Nimbus: a chunk).
    /// `logger` is the request's (its lines carry the request's `request_id`).
    func upload(_ request: Request, token: String, now: Int64, logger: Logger) async -> TokenAnswer {
        await TokenAnswer.finding { await upload(request, token: token, now: now, logger: logger, container: &$0) }
    }

    private func upload(_ request: Request, token: String, now: Int64, logger: Logger, container: inout String?) async
        -> Response
    {
        do {
            let upload = try await storedUpload(token, now: now)
            container = upload.database.container
            try Self.checkPending(upload, now: now)
            guard writing.withLockedValue({ $0.insert(upload.id).inserted }) else {
                throw CloudKitError(.conflict, "another request is sending bytes to this upload URL; wait for it to end")
            }
            defer { _ = writing.withLockedValue { $0.remove(upload.id) } }
            if request.method == .put {
                return try await receiveChunk(request, upload: upload, now: now, logger: logger)
            }
            return try await receiveWhole(request, upload: upload, now: now, logger: logger)
        } catch let error as CloudKitError {
            return APIResponder.errorResponse(error)
        } catch {
            metrics?.countStoreError(at: .assets)
            logger.error("asset upload failed: \(error)")
            return APIResponder.errorResponse(CloudKitError(.internalError, "the server failed to store the upload; try again"))
        }
    }

    /// `GET` of an upload URL (Nimbus): how many bytes the server holds, or the `singleFile`
    /// of a finished upload whose answer the client missed.
    func uploadStatus(token: String, now: Int64, logger: Logger) async -> TokenAnswer {
        await TokenAnswer.finding { await uploadStatus(token: token, now: now, logger: logger, container: &$0) }
    }

    private func uploadStatus(token: String, now: Int64, logger: Logger, container: inout String?) async -> Response {
        do {
            let upload = try await storedUpload(token, now: now)
            container = upload.database.container
            let id = upload.id
            if let singleFile = upload.singleFile, !upload.used {
                return APIResponder.jsonResponse(.object(["singleFile": singleFile.wireJSON]))
            }
            guard upload.completion == nil else { throw Self.used }
            // A request still sending bytes to this upload on this node (a connection that
            // just dropped is still storing its last buffers): answer once it has ended, so
            // that the client resumes at the final count instead of meeting a 409.
            var waited = 0
            while waited < 250, writing.withLockedValue({ $0.contains(id) }) {
                try await Task.sleep(for: .milliseconds(20))
                waited += 1
            }
            let received = try await bytes.uploadedLength(id)
            return APIResponder.jsonResponse(.object(["receivedBytes": .int(received)]))
        } catch let error as CloudKitError {
            return APIResponder.errorResponse(error)
        } catch {
            metrics?.countStoreError(at: .assets)
            logger.error("asset upload status failed: \(error)")
            return APIResponder.errorResponse(CloudKitError(.internalError, "the server failed to read the upload; try again"))
        }
    }

    static let used = CloudKitError(.badRequest, "this upload URL was already used; ask assets/upload for a new one")

    /// The upload an upload token names.
    private func storedUpload(_ token: String, now: Int64) async throws -> AssetUpload {
        let id = try links.upload(token, now: now)
        guard let upload = try await metadata.assetUpload(id: id) else { throw AssetLinks.unknown }
        return upload
    }

    /// The container of the upload an upload token names (`nil`: no such upload), for a preflight.
    func uploadContainer(token: String, now: Int64) async -> String? {
        try? await storedUpload(token, now: now).database.container
    }

    private static func checkPending(_ upload: AssetUpload, now: Int64) throws {
        guard upload.completion == nil else { throw Self.used }
        guard upload.expiresAt > now else {
            throw CloudKitError(.badRequest, "this upload URL has expired; ask assets/upload for a new one")
        }
    }

    private func tooLarge(_ size: Int64?) -> CloudKitError {
        let what = size.map { "the file (\($0) bytes) is" } ?? "the file is"
        return CloudKitError(.limitExceeded, "\(what) larger than \(settings.maxAssetBytes) bytes, this server's limit per asset")
    }

    private func receiveWhole(_ request: Request, upload: AssetUpload, now: Int64, logger: Logger) async throws -> Response {
        let announced = request.headers[.contentLength].flatMap { Int64($0) }
        if let announced, announced > settings.maxAssetBytes { throw tooLarge(announced) }
        if let announced, let quota { try await quota.check(upload.database, adding: announced) }
        let meter = BodyMeter(limit: settings.maxAssetBytes)
        let received: Int64
        do {
            received = try await bytes.appendUpload(upload.id, at: 0, meter.metered(request.body))
        } catch let error as CloudKitError where error.code == .limitExceeded {
            // Nothing of a refused file stays.
            try? await bytes.discardUpload(upload.id)
            throw tooLarge(nil)
        } catch let error as CloudKitError {
            throw error
        } catch {
            logger.debug("upload body ended early: \(error)")
            throw truncated(upload.id, received: try? await bytes.uploadedLength(upload.id), announced: announced)
        }
        metrics?.countAssetBytesUploaded(received)
        if let announced, received < announced {
            throw truncated(upload.id, received: received, announced: announced)
        }
        return try await finish(upload, size: received, sha256: meter.digest, now: now)
    }

    private func receiveChunk(_ request: Request, upload: AssetUpload, now: Int64, logger: Logger) async throws -> Response {
        guard let header = request.headers[.contentRange], let range = ContentRange(header: header) else {
            throw CloudKitError(
                .badRequest, "a PUT to an upload URL needs 'Content-Range: bytes start-end/total' (Nimbus's resumable uploads)")
        }
        guard range.total <= settings.maxAssetBytes else { throw tooLarge(range.total) }
        let held = try await bytes.uploadedLength(upload.id)
        guard range.start == 0 || range.start == held else {
            throw CloudKitError(
                .conflict, "the server holds \(held) bytes of this upload; send the chunk starting at byte \(held) (or at 0)")
        }
        let meter = BodyMeter(limit: range.count)
        let received: Int64
        do {
            received = try await bytes.appendUpload(upload.id, at: range.start, meter.metered(request.body))
        } catch let error as CloudKitError where error.code == .limitExceeded {
            throw CloudKitError(.badRequest, "the chunk is longer than its Content-Range (\(range.count) bytes)")
        } catch let error as CloudKitError {
            throw error
        } catch {
            logger.debug("upload chunk ended early: \(error)")
            throw truncated(upload.id, received: try? await bytes.uploadedLength(upload.id), announced: range.end + 1)
        }
        metrics?.countAssetBytesUploaded(received - range.start)
        guard received == range.end + 1 else {
            throw truncated(upload.id, received: received, announced: range.end + 1)
        }
        guard received == range.total else {
            var headers = HTTPFields()
            headers[.range] = "bytes=0-\(received - 1)"
            var response = APIResponder.jsonResponse(.object(["receivedBytes": .int(received)]), status: .accepted)
            response.headers.append(contentsOf: headers)
            return response
        }
        // A file sent in one chunk was hashed on its way in; a resumed one is read back once.
        var digest = meter.digest
        if range.start != 0 {
            var hasher = SHA256()
            try await bytes.readUpload(upload.id) { buffer in buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) } }
            digest = Array(hasher.finalize())
        }
        return try await finish(upload, size: received, sha256: digest, now: now)
    }

    private func truncated(_ id: String, received: Int64?, announced: Int64?) -> CloudKitError {
        let got = received.map { "after \($0) bytes" } ?? "early"
        let of = announced.map { " of \($0)" } ?? ""
        return CloudKitError(
            .badRequest,
            "the request body ended \(got)\(of): the connection failed or the body's framing is malformed; GET the "
                + "upload URL for the bytes the server holds and PUT the rest with Content-Range, or POST the file again")
    }

    private func finish(_ upload: AssetUpload, size: Int64, sha256 digest: [UInt8], now: Int64) async throws -> Response {
        let hex = digest.map { String(format: "%02x", $0) }.joined()
        let key = AssetBlobKey(database: upload.database, sha256: hex)
        try await bytes.commitUpload(upload.id, as: key)
        let completion = AssetUpload.Completion(sha256: hex, size: size, receipt: Self.newReceipt())
        let completed = try await metadata.completeAssetUpload(id: upload.id, completion, now: now)
        guard let singleFile = completed.singleFile else {
            throw CloudKitError(.internalError, "the upload was stored but not recorded; try again")
        }
        return APIResponder.jsonResponse(.object(["singleFile": singleFile.wireJSON]))
    }

    /// 192 random bits, base64url.
    static func newReceipt() -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64URL.encode((0..<24).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    // MARK: - Download

    /// `GET` of a download URL: the whole file (`200`), or one `Range` (`206`, `416`).
    func download(_ request: Request, token: String, now: Int64, logger: Logger) async -> TokenAnswer {
        await TokenAnswer.finding { await download(request, token: token, now: now, logger: logger, container: &$0) }
    }

    private func download(_ request: Request, token: String, now: Int64, logger: Logger, container: inout String?) async
        -> Response
    {
        do {
            let (database, sha) = try links.download(token, now: now)
            container = database.container
            guard try await metadata.assetSize(sha256: sha, in: database) != nil else {
                throw CloudKitError(.notFound, "the asset is no longer stored")
            }
            let key = AssetBlobKey(database: database, sha256: sha)
            if settings.redirectDownloads, let url = try bytes.redirectURL(for: key, lifetime: settings.redirectLifetime) {
                // Authorised above (a valid token for an asset the database still holds): the
                // object store serves the bytes, ranges included.
                var headers = HTTPFields()
                headers[.location] = url
                headers[.cacheControl] = "no-store"
                return Response(status: .temporaryRedirect, headers: headers)
            }
            guard let length = try await bytes.size(of: key) else {
                throw CloudKitError(.notFound, "the asset's bytes are no longer stored")
            }
            var headers = HTTPFields()
            headers[.contentType] = "application/octet-stream"
            headers[.acceptRanges] = "bytes"
            headers[.eTag] = "\"\(sha)\""
            let range: Range<Int64>
            let status: HTTPResponse.Status
            switch ByteRange(header: request.headers[.range], length: length) {
            case .whole:
                range = 0..<length
                status = .ok
            case .partial(let partial):
                range = partial
                status = .partialContent
                headers[.contentRange] = "bytes \(partial.lowerBound)-\(partial.upperBound - 1)/\(length)"
            case .unsatisfiable:
                headers[.contentRange] = "bytes */\(length)"
                let error = CloudKitError(.badRequest, "the requested range starts past the file's \(length) bytes")
                var response = APIResponder.jsonResponse(error.wireJSON(uuid: APIResponder.newUUID()), status: .rangeNotSatisfiable)
                response.headers.append(contentsOf: headers)
                return response
            }
            let store = bytes
            let metrics = metrics
            let body = ResponseBody(contentLength: Int(range.upperBound - range.lowerBound)) { writer in
                do {
                    try await store.read(key, range: range) { chunk in
                        metrics?.countAssetBytesDownloaded(Int64(chunk.readableBytes))
                        try await writer.write(chunk)
                    }
                } catch {
                    logger.error("asset download failed mid-way: \(error)")
                    throw error
                }
                try await writer.finish(nil)
            }
            return Response(status: status, headers: headers, body: body)
        } catch let error as CloudKitError {
            return APIResponder.errorResponse(error)
        } catch {
            metrics?.countStoreError(at: .assets)
            logger.error("asset download failed: \(error)")
            return APIResponder.errorResponse(CloudKitError(.internalError, "the server failed to read the asset; try again"))
        }
    }
}
