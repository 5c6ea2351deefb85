import Crypto
import Foundation

extension Database {
    /// Downloads an asset's bytes to `destination` (replacing a file there), through the
    /// container's ``Container/assetTransport``.
    ///
    /// The bytes arrive in `destination` + `.partial` first; a download that was interrupted
    /// (cancelled, connection lost, app killed) continues from that file's length with a
    /// `Range` request the next time. The finished file is checked against the asset's
    /// size and checksum before it is moved into place. An encrypted asset
    /// (``Asset/isEncrypted``) is opened on the way, chunk by chunk: `destination` receives
    /// the plaintext, and nothing at all when a chunk does not authenticate.
    ///
    /// ```swift
    /// let file = try await database.download(photo, to: caches.appendingPathComponent("photo.jpg")) { progress in
    ///     print("\(Int(progress.fractionCompleted * 100))%")
    /// }
    /// ```
    ///
    /// - Throws: ``NimbusError/Code/assetNotAvailable`` when the download URL expired or the
    ///   server no longer holds the bytes (fetch the record again for a fresh URL),
    ///   ``NimbusError/Code/assetFileModified`` when the bytes do not match the checksum,
    ///   ``NimbusError/Code/invalidArguments`` for an asset not uploaded yet;
    ///   ``NimbusError/Code/decryptionFailed`` for encrypted bytes that do not authenticate
    ///   (altered, re-ordered, cut, or an asset moved from another record),
    ///   ``NimbusError/Code/encryptionKeysMissing`` when this device lacks the zone's keys.
    @discardableResult
    public func download(
        _ asset: Asset, to destination: URL, progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws -> URL {
        if asset.isEncrypted { return try await downloadEncrypted(asset, to: destination, progress: progress) }
        return try await AssetDownloader(transport: container.assetTransport, timeout: container.assetTimeout)
            .download(asset, to: destination, progress: progress)
    }
}

extension Asset {
    /// Downloads the bytes to `destination` with `transport` (the download URL carries its
    /// own authorisation); see ``Database/download(_:to:progress:)``, which uses the
    /// container's transport.
    @discardableResult
    public func download(
        to destination: URL, transport: any AssetTransport = HTTPClientTransport(),
        progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws -> URL {
        guard !isEncrypted else {
            throw NimbusError(
                .encryptionKeysMissing, "an encrypted asset opens with its zone's keys: download it through its Database")
        }
        return try await AssetDownloader(transport: transport, timeout: .seconds(3600)).download(self, to: destination, progress: progress)
    }
}

/// Ranged, resumable, verified downloads.
struct AssetDownloader: Sendable {
    let transport: any AssetTransport
    let timeout: Duration
    /// How many times a download continues after the connection broke before it gives up.
    static let maxResumes = 3

    /// Where the bytes of a download to `destination` gather until they are complete.
    static func partialFile(for destination: URL) -> URL {
        destination.deletingLastPathComponent().appendingPathComponent(destination.lastPathComponent + ".partial")
    }

    func download(_ asset: Asset, to destination: URL, progress: (@Sendable (TransferProgress) -> Void)?) async throws -> URL {
        guard let url = asset.downloadURL, let size = asset.size, let checksum = asset.fileChecksum else {
            throw NimbusError(
                .invalidArguments, "the asset has no download URL: it was not uploaded yet (save its record first)")
        }
        let partial = Self.partialFile(for: destination)
        var broken = 0
        var restarted = false
        while true {
            if Task.isCancelled { throw NimbusError.cancelled() }
            var held = AssetFile.existingSize(of: partial)
            if held > size {
                try? FileManager.default.removeItem(at: partial)
                held = 0
            }
            if held < size || size == 0 {
                var request = TransportRequest(method: .get, url: url, timeout: timeout)
                if held > 0 { request.headers["Range"] = "bytes=\(held)-" }
                let start = held
                let response: TransportResponse
                do {
                    response = try await transport.download(request, into: partial) { written in
                        progress?(TransferProgress(completedBytes: start + written, totalBytes: size))
                    }
                } catch let error as NimbusError
                    where (error.code == .networkFailure || error.code == .networkUnavailable) && broken < Self.maxResumes
                        && !Task.isCancelled
                {
                    broken += 1
                    continue
                } catch let error as NimbusError {
                    throw Task.isCancelled ? NimbusError.cancelled() : error
                } catch {
                    if error is CancellationError || Task.isCancelled { throw NimbusError.cancelled() }
                    throw NimbusError(.networkFailure, "the download failed: \(error)")
                }
                switch response.status {
                case 200, 206:
                    break
                case 416 where !restarted:
                    // The partial file is not a prefix the server can continue: start over.
                    try? FileManager.default.removeItem(at: partial)
                    restarted = true
                    continue
                case 400, 403, 404, 410:
                    // A GET carries nothing of ours but the URL: the URL is what is refused.
                    var error = NimbusError(httpStatus: response.status, body: response.body, headers: response.headers, zoneID: nil)
                    error.code = .assetNotAvailable
                    error.message = "the asset cannot be downloaded (\(error.message)): its download URL expired or the "
                        + "server no longer holds it; fetch the record again for a fresh URL"
                    throw error
                default:
                    throw NimbusError(httpStatus: response.status, body: response.body, headers: response.headers, zoneID: nil)
                }
            }
            guard AssetFile.existingSize(of: partial) == size, try Self.checksum(of: partial) == checksum else {
                try? FileManager.default.removeItem(at: partial)
                if !restarted {
                    restarted = true
                    continue
                }
                throw NimbusError(
                    .assetFileModified, "the downloaded bytes do not match the asset's size and checksum; download again")
            }
            progress?(TransferProgress(completedBytes: size, totalBytes: size))
            let manager = FileManager.default
            if manager.fileExists(atPath: destination.path) { try manager.removeItem(at: destination) }
            try manager.moveItem(at: partial, to: destination)
            return destination
        }
    }

    /// The base64 SHA-256 of a file's bytes (CloudKit's `fileChecksum`), read in chunks.
    static func checksum(of file: URL) throws -> String {
        var hasher = SHA256()
        let size = AssetFile.existingSize(of: file)
        try AssetFile.chunks(of: file, range: 0..<size) { hasher.update(data: $0) }
        return Data(hasher.finalize()).base64EncodedString()
    }
}
