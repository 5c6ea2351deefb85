import Crypto
import Foundation
import NimbusCrypto
import NimbusProtocol

/// Encrypted assets (docs/ENCRYPTION.md, "Encrypted assets"). The rule, as in CloudKit, where
/// every asset is encrypted: with ``Container/encryption`` set, every asset this device
/// uploads to the private database is encrypted, each file with its own key wrapped by the
/// zone's key in the asset's `wrappingKey`, and so is every asset a participant uploads
/// through the shared database, with the zone key its owner granted them (none granted:
/// ``NimbusError/Code/encryptionKeysMissing``, never a plain upload); the public database's
/// assets are not (no one key reaches everyone).
/// Reading needs nothing new: ``Database/download(_:to:progress:)`` and
/// ``Database/bytes(of:in:)`` open an encrypted asset on a device that holds the zone's keys
/// (the owner's devices, and participants the owner granted the zone's key), whichever
/// database it was fetched from.
extension Database {
    /// Whether this database encrypts the assets it uploads (the rule above): the private and
    /// shared databases of a container with keys.
    package var encryptsAssets: Bool { scope != .public && container.encryption != nil }

    /// The encrypted-asset format (``AssetChunks`` version) this build seals new uploads in;
    /// a sync engine keeps it beside an upload URL, for ``uploadAsset(_:for:to:resuming:format:progress:)``.
    package static var currentAssetFormat: UInt8 { AssetChunks.version }

    /// Uploads one asset file for `slot` and returns the server's `singleFile`; when this
    /// database ``encryptsAssets``, the file's ciphertext (``AssetChunks``), sealed as it is
    /// sent, with the wrapped table key in `wrappingKey` and its checksum in
    /// `referenceChecksum`.
    ///
    /// Each chunk's key is derived from its own bytes: the same file in the same zone is the
    /// same ciphertext, which the server stores once, and an upload resumed after a relaunch
    /// sends the same bytes. `format` is the ``AssetChunks`` version to seal in: the one an
    /// interrupted upload began in when it resumes (`nil`: ``currentAssetFormat``), so that
    /// the bytes sent after a relaunch by a newer build continue the older build's file.
    package func uploadAsset(
        _ file: URL, for slot: AssetSlot, to url: URL, resuming: Bool = false, format: UInt8? = nil,
        progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws -> NimbusProtocol.Asset {
        guard encryptsAssets else { return try await uploadFile(file, to: url, resuming: resuming, progress: progress) }
        let version = format ?? Self.currentAssetFormat
        guard AssetChunks.versions.contains(version) else {
            throw NimbusError(
                .invalidArguments,
                "an upload begun in asset format \(version) cannot be continued by this build (it writes "
                    + "\(AssetChunks.versions.lowerBound)–\(AssetChunks.versions.upperBound)); ask for a new upload URL")
        }
        let (zoneKey, owner) = try await encryptionKeys().sealingKey(for: slot.recordID.zoneID, in: self)
        let secrets = AssetChunks.Secrets(zoneKey: zoneKey, version: version)
        let stamp = try FileStamp(file)
        let layout = AssetChunks.Layout(plaintextSize: stamp.size, version: version)
        let box = TableKeyBox()
        let transport = container.assetTransport
        var asset = try await upload(size: layout.sealedSize, of: file, to: url, resuming: resuming, progress: progress) {
            request, range, report in
            let body = AssetUploadBody(length: range.upperBound - range.lowerBound) {
                ChunkSealingSource(file: file, layout: layout, secrets: secrets, stamp: stamp, start: range.lowerBound, tableKey: box)
            }
            do {
                return try await transport.upload(request, body: body, progress: report)
            } catch where (try? FileStamp(file)) != stamp {
                throw NimbusError(.assetFileModified, "the asset's file \(file.path) changed while it was encrypted; save the record again")
            }
        }
        // The server may have held the whole upload already (a resumed one): then the key is
        // worked out from the file alone.
        let tableKey: SymmetricKey
        if let key = await box.key {
            tableKey = key
        } else {
            tableKey = try await ChunkSealingSource.tableKey(of: file, layout: layout, secrets: secrets)
        }
        guard try FileStamp(file) == stamp else {
            throw NimbusError(.assetFileModified, "the asset's file \(file.path) changed while it was uploaded; save the record again")
        }
        let place = FieldPlace(
            container: container.identifier, zoneName: slot.recordID.zoneID.zoneName, ownerRecordName: owner,
            recordName: slot.recordID.recordName, fieldName: slot.fieldName)
        let wrapped = try WrappedAssetKey.wrap(key: tableKey, with: zoneKey, for: place)
        asset.wrappingKey = Data(wrapped.bytes).base64EncodedString()
        asset.referenceChecksum = wrapped.referenceChecksum
        return asset
    }

    /// Downloads an encrypted asset into `destination`. A version 2 or 3 file (``AssetChunks``):
    /// its key table first, then its chunks, each opened as it arrives straight into
    /// `destination` + `.partial` (an interrupted download continues after the last whole
    /// chunk); every byte is authenticated, which is the check a plain download's checksum
    /// makes. A version 1 file (``AssetSealing``): its ciphertext downloaded beside
    /// `destination` (checked against its checksum), then opened. Nothing is written to
    /// `destination` unless every chunk authenticates.
    func downloadEncrypted(
        _ asset: Asset, to destination: URL, progress: (@Sendable (TransferProgress) -> Void)?
    ) async throws -> URL {
        let key = try await fileKey(of: asset)
        let size = asset.size ?? 0
        let header = try await ranged(asset, 0..<min(size, Int64(AssetSealing.headerByteCount)))
        let (version, chunkSize) = try Self.opening { () throws(EncryptionError) in try AssetChunks.header(header) }
        guard AssetChunks.versions.contains(version) else {
            return try await downloadSealedFile(asset, with: key, to: destination, progress: progress)
        }
        let (layout, keys) = try await keyTable(of: asset, version: version, chunkSize: chunkSize, tableKey: key)
        // Named for the file's content (its chunk keys), so that only the same file resumes.
        let name = SHA256.hash(data: keys).prefix(8).map { String(format: "%02x", $0) }.joined()
        let partial = destination.deletingLastPathComponent().appendingPathComponent(destination.lastPathComponent + ".opening-" + name)
        var broken = 0
        while true {
            if Task.isCancelled { throw NimbusError.cancelled() }
            do {
                try await receiveChunks(of: asset, layout, keys: keys, into: partial, progress: progress)
                break
            } catch let error as NimbusError
                where (error.code == .networkFailure || error.code == .networkUnavailable) && broken < AssetDownloader.maxResumes
                    && !Task.isCancelled
            {
                broken += 1
            } catch {
                if (error as? NimbusError)?.code == .decryptionFailed { try? FileManager.default.removeItem(at: partial) }
                throw error
            }
        }
        progress?(TransferProgress(completedBytes: size, totalBytes: size))
        let manager = FileManager.default
        if manager.fileExists(atPath: destination.path) { try manager.removeItem(at: destination) }
        try manager.moveItem(at: partial, to: destination)
        return destination
    }

    /// The chunks of a version 2 or 3 ciphertext from the first one `partial` does not hold whole,
    /// opened onto `partial`.
    private func receiveChunks(
        of asset: Asset, _ layout: AssetChunks.Layout, keys: [UInt8], into partial: URL,
        progress: (@Sendable (TransferProgress) -> Void)?
    ) async throws {
        let held = AssetFile.existingSize(of: partial)
        let first = held > layout.plaintextSize ? 0 : Int(held / Int64(layout.chunkSize))
        let writer = try AssetFile.Writer(partial, append: first > 0)
        defer { writer.close() }
        if first > 0 { try writer.truncate(at: Int64(first) * Int64(layout.chunkSize)) }
        guard let url = asset.downloadURL else { throw NimbusError(.invalidArguments, "the asset has no download URL") }
        let from = layout.chunkOffset(first)
        var request = TransportRequest(method: .get, url: url, timeout: container.assetTimeout)
        request.headers["Range"] = "bytes=\(from)-\(layout.tableOffset - 1)"
        var opener = ChunkOpener(layout: layout, keys: keys, writer: writer, firstChunk: first)
        var position: Int64 = 0
        let total = layout.sealedSize
        let response = try await container.assetTransport.download(request) { status, bytes in
            // A server that ignores the range sends the whole file: only the chunks count.
            let pieceStart = (status == 206 ? from : 0) + position
            position += Int64(bytes.count)
            let lower = max(pieceStart, from), upper = min(pieceStart + Int64(bytes.count), layout.tableOffset)
            if lower < upper {
                let base = bytes.startIndex - Int(pieceStart)
                try await opener.receive(bytes[(base + Int(lower))..<(base + Int(upper))])
            }
            progress?(TransferProgress(completedBytes: min(upper, total), totalBytes: total))
        }
        guard response.status == 200 || response.status == 206 else { throw Self.downloadRefused(response) }
        guard try await opener.finish() else {
            throw NimbusError(.networkFailure, "the download of the encrypted file stopped after chunk \(opener.index)")
        }
    }

    /// A version 2 or 3 ciphertext's layout and key table (one ranged `GET`), opened with its table key.
    private func keyTable(
        of asset: Asset, version: UInt8, chunkSize: Int, tableKey: SymmetricKey
    ) async throws -> (AssetChunks.Layout, [UInt8]) {
        guard let layout = AssetChunks.Layout(sealedSize: asset.size ?? 0, chunkSize: chunkSize, version: version) else {
            throw NimbusError(.decryptionFailed, "the encrypted file's length fits no file of \(chunkSize)-byte chunks: it was cut or padded")
        }
        let table = try await ranged(asset, layout.tableOffset..<layout.sealedSize)
        return (layout, try Self.opening { () throws(EncryptionError) in try AssetChunks.openTable(table, layout: layout, tableKey: tableKey) })
    }

    /// `body`'s result, its ``EncryptionError`` as ``NimbusError/Code/decryptionFailed``.
    static func opening<T>(_ body: () throws(EncryptionError) -> T) throws(NimbusError) -> T {
        do {
            return try body()
        } catch {
            throw NimbusError(.decryptionFailed, "the asset's bytes do not open: \(error.message)")
        }
    }

    /// A version 1 file: its ciphertext downloaded beside `destination` (resumable, checked
    /// against its checksum as any download), opened into `destination` and removed.
    private func downloadSealedFile(
        _ asset: Asset, with key: SymmetricKey, to destination: URL, progress: (@Sendable (TransferProgress) -> Void)?
    ) async throws -> URL {
        let sealed = destination.deletingLastPathComponent().appendingPathComponent(destination.lastPathComponent + ".sealed")
        let opened = destination.deletingLastPathComponent().appendingPathComponent(destination.lastPathComponent + ".opened")
        _ = try await AssetDownloader(transport: container.assetTransport, timeout: container.assetTimeout)
            .download(asset, to: sealed, progress: progress)
        defer { try? FileManager.default.removeItem(at: sealed) }
        try await AssetFileSealing.open(sealed, with: key, to: opened)
        let manager = FileManager.default
        if manager.fileExists(atPath: destination.path) { try manager.removeItem(at: destination) }
        try manager.moveItem(at: opened, to: destination)
        return destination
    }

    /// The bytes `range` of an asset's file (clamped to its length), read with one ranged
    /// `GET` (two for an encrypted asset: its header, then the chunks that cover `range`,
    /// which are opened on their own), never the whole file.
    ///
    /// ```swift
    /// let header = try await database.bytes(of: video, in: 0..<4096)
    /// ```
    ///
    /// - Throws: ``NimbusError/Code/decryptionFailed`` when a chunk does not authenticate,
    ///   ``NimbusError/Code/encryptionKeysMissing`` when this device lacks the zone's keys,
    ///   ``NimbusError/Code/assetNotAvailable`` when the download URL expired.
    public func bytes(of asset: Asset, in range: Range<Int64>) async throws -> Data {
        guard let size = asset.size, asset.downloadURL != nil else {
            throw NimbusError(.invalidArguments, "the asset has no download URL: it was not uploaded yet (save its record first)")
        }
        guard asset.isEncrypted else {
            let upper = min(range.upperBound, size)
            guard range.lowerBound < upper else { return Data() }
            return try await ranged(asset, range.lowerBound..<upper)
        }
        let key = try await fileKey(of: asset)
        let header = try await ranged(asset, 0..<min(size, Int64(AssetSealing.headerByteCount)))
        let (version, chunkSize) = try Self.opening { () throws(EncryptionError) in try AssetChunks.header(header) }
        guard AssetChunks.versions.contains(version) else {
            return try await sealedFileBytes(of: asset, in: range, key: key, header: header)
        }
        let (layout, keys) = try await keyTable(of: asset, version: version, chunkSize: chunkSize, tableKey: key)
        let upper = min(range.upperBound, layout.plaintextSize)
        guard range.lowerBound < upper else { return Data() }
        let first = Int(range.lowerBound / Int64(chunkSize))
        let last = Int((upper - 1) / Int64(chunkSize))
        let sealed = try await ranged(asset, layout.chunkOffset(first)..<layout.chunkOffset(last + 1))
        var opened: [UInt8] = []
        try Self.opening { () throws(EncryptionError) in
            for index in first...last {
                let start = sealed.startIndex + Int(layout.chunkOffset(index) - layout.chunkOffset(first))
                try AssetChunks.openChunk(
                    sealed[start..<start + layout.plainCount(of: index) + AssetChunks.tagByteCount], index: index, layout: layout,
                    key: keys[index * AssetChunks.keyByteCount..<(index + 1) * AssetChunks.keyByteCount], appendingTo: &opened)
            }
        }
        let skip = Int(range.lowerBound - Int64(first) * Int64(chunkSize))
        return Data(opened[skip..<(skip + Int(upper - range.lowerBound))])
    }

    /// ``bytes(of:in:)`` of a version 1 file (``AssetSealing``).
    private func sealedFileBytes(of asset: Asset, in range: Range<Int64>, key: SymmetricKey, header: Data) async throws -> Data {
        let size = asset.size ?? 0
        do {
            let (chunkSize, prefix) = try AssetSealing.header(Array(header))
            guard let plain = AssetSealing.plaintextSize(sealedSize: size, chunkSize: chunkSize) else {
                throw EncryptionError(.authenticationFailed, "the encrypted file's length fits no file: it was cut or padded")
            }
            let upper = min(range.upperBound, plain)
            guard range.lowerBound < upper else { return Data() }
            let first = Int(range.lowerBound / Int64(chunkSize))
            let last = Int((upper - 1) / Int64(chunkSize))
            let count = AssetSealing.chunkCount(plaintextSize: plain, chunkSize: chunkSize)
            let start = AssetSealing.chunkOffset(first, chunkSize: chunkSize)
            let sealed = Array(try await ranged(asset, start..<min(AssetSealing.chunkOffset(last + 1, chunkSize: chunkSize), size)))
            var opened: [UInt8] = []
            let sealedChunk = chunkSize + AssetSealing.tagByteCount
            for index in first...last {
                let offset = (index - first) * sealedChunk
                opened += try AssetSealing.openChunk(
                    Array(sealed[offset..<min(offset + sealedChunk, sealed.count)]), index: index, final: index == count - 1,
                    prefix: prefix, key: key)
            }
            let skip = Int(range.lowerBound - Int64(first) * Int64(chunkSize))
            return Data(opened[skip..<(skip + Int(upper - range.lowerBound))])
        } catch let error as EncryptionError {
            throw NimbusError(.decryptionFailed, "the asset's bytes do not open: \(error.message)")
        }
    }

    /// The error of a download the server refused: ``NimbusError/Code/assetNotAvailable``
    /// when it is the URL that is refused.
    static func downloadRefused(_ response: TransportResponse) -> NimbusError {
        var error = NimbusError(httpStatus: response.status, body: response.body, headers: response.headers, zoneID: nil)
        if [400, 403, 404, 410].contains(response.status) { error.code = .assetNotAvailable }
        return error
    }

    /// One ranged `GET` of an asset's download URL: exactly `range`'s bytes, or an error.
    private func ranged(_ asset: Asset, _ range: Range<Int64>) async throws -> Data {
        guard let url = asset.downloadURL else { throw NimbusError(.invalidArguments, "the asset has no download URL") }
        var request = TransportRequest(method: .get, url: url, timeout: container.assetTimeout)
        request.headers["Range"] = "bytes=\(range.lowerBound)-\(range.upperBound - 1)"
        let response = try await container.transport.send(request)
        switch response.status {
        case 206 where response.body.count == range.count: return response.body
        case 200 where response.body.count >= range.upperBound:
            return response.body.subdata(in: Int(range.lowerBound)..<Int(range.upperBound))
        case 400, 403, 404, 410:
            throw Self.downloadRefused(response)
        case 200, 206:
            throw NimbusError(.assetFileModified, "the server answered \(response.body.count) bytes for \(range.count) asked for")
        default:
            throw NimbusError(httpStatus: response.status, body: response.body, headers: response.headers, zoneID: nil)
        }
    }

    /// The file key of an encrypted asset, unwrapped with its zone's key from this account's
    /// key directory.
    func fileKey(of asset: Asset) async throws -> SymmetricKey {
        let wrapped = try Self.wrappedKey(of: asset)
        let encryption = try encryptionKeys()
        // The asset names its zone's owner: this user's own zone (the key directory), or
        // another user's zone shared with this one (the key the owner granted).
        let mine = wrapped.ownerRecordName == (try await encryption.user(of: container))
        let (database, zoneID) =
            mine
            ? (container.privateCloudDatabase, ZoneID(zoneName: wrapped.zoneName))
            : (container.sharedCloudDatabase, ZoneID(zoneName: wrapped.zoneName, ownerRecordName: wrapped.ownerRecordName))
        let keys: [ZoneKey], owner: String
        do {
            (keys, owner) = try await encryption.openingKeys(for: zoneID, keyID: wrapped.keyID, in: database)
        } catch let error as NimbusError
            where !mine && [.zoneNotFound, .unknownItem, .permissionFailure, .notAuthenticated].contains(error.code)
        {
            throw NimbusError(
                .encryptionKeysMissing,
                "the asset was encrypted in zone '\(wrapped.zoneName)' of another user, which is not shared with this account "
                    + "(\(error.code.rawValue)): it holds no key for it")
        }
        guard wrapped.ownerRecordName == owner else {
            throw NimbusError(.encryptionKeysMissing, "the asset was encrypted in another user's zone; this account holds no key for it")
        }
        do {
            return try wrapped.unwrap(keys: keys, container: container.identifier)
        } catch {
            throw NimbusError(
                error.code == .unknownKey ? .encryptionKeysMissing : .decryptionFailed, "the asset's file key: \(error.message)")
        }
    }

    /// The clear part of an asset's `wrappingKey`, checked against its `referenceChecksum`.
    static func wrappedKey(of asset: Asset) throws(NimbusError) -> WrappedAssetKey {
        guard let text = asset.serverValue?.wrappingKey, let bytes = Data(base64Encoded: text) else {
            throw NimbusError(.decryptionFailed, "the asset's wrappingKey is not base64")
        }
        let wrapped: WrappedAssetKey
        do {
            wrapped = try WrappedAssetKey(Array(bytes))
        } catch {
            throw NimbusError(.decryptionFailed, "the asset's wrappingKey: \(error.message)")
        }
        guard asset.serverValue?.referenceChecksum == wrapped.referenceChecksum else {
            throw NimbusError(.decryptionFailed, "the asset's referenceChecksum is not its wrappingKey's checksum")
        }
        return wrapped
    }

    /// Checks that each encrypted asset of `record` was wrapped for this record and field (a
    /// server that moved an asset dictionary from another record or field is caught).
    func checkAssetPlaces(of record: Record) async throws(NimbusError) {
        guard scope != .public, let keys = container.encryption,
            record.values.values.contains(where: { $0.sdkAssets.contains(where: \.isEncrypted) })
        else { return }
        for (field, value) in record.values.sorted(by: { $0.key < $1.key }) {
            for asset in value.sdkAssets where asset.isEncrypted {
                let wrapped = try Self.wrappedKey(of: asset)
                var owner = record.id.zoneID.ownerRecordName ?? ""
                if scope == .private {
                    do {
                        owner = try await keys.user(of: container)
                    } catch let error as NimbusError {
                        throw error
                    } catch {
                        throw NimbusError(.networkFailure, "\(error)")
                    }
                }
                let place = FieldPlace(
                    container: container.identifier, zoneName: record.id.zoneID.zoneName, ownerRecordName: owner,
                    recordName: record.id.recordName, fieldName: field)
                guard wrapped.belongs(to: place) else {
                    throw NimbusError(
                        .decryptionFailed,
                        "the encrypted asset in '\(field)' was wrapped for another record or field: it was moved", recordID: record.id)
                }
            }
        }
    }
}

extension Asset {
    /// Whether the asset's bytes are encrypted (its dictionary carries a `wrappingKey`): they
    /// open on the devices that hold its zone's keys (docs/ENCRYPTION.md).
    public var isEncrypted: Bool { serverValue?.wrappingKey != nil }
}
