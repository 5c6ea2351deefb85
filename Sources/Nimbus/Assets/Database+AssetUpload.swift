import Foundation
import NimbusProtocol

extension Database {
    /// One asset field to upload: the record and field the upload URL is bound to.
    package struct AssetSlot: Sendable, Hashable {
        package var recordID: Record.ID
        package var recordType: String
        package var fieldName: String

        package init(recordID: Record.ID, recordType: String, fieldName: String) {
            self.recordID = recordID
            self.recordType = recordType
            self.fieldName = fieldName
        }
    }

    /// At most this many upload URLs per `assets/upload` request (CloudKit's limit).
    static let maxUploadTokensPerRequest = 200

    /// `assets/upload`: one upload URL per slot, in order (one request per zone and per 200
    /// slots).
    package func requestUploadURLs(for slots: [AssetSlot]) async throws -> [AssetSlot: [URL]] {
        var urls: [AssetSlot: [URL]] = [:]
        for (zoneID, zoneSlots) in Self.groupedByZone(slots, zone: \.recordID.zoneID) {
            var start = 0
            while start < zoneSlots.count {
                let page = Array(zoneSlots[start..<min(start + Self.maxUploadTokensPerRequest, zoneSlots.count)])
                start += page.count
                let body: JSON = .object([
                    "zoneID": zoneID.wireJSON,
                    "tokens": .array(page.map { slot in
                        .object([
                            "recordName": .string(slot.recordID.recordName), "recordType": .string(slot.recordType),
                            "fieldName": .string(slot.fieldName),
                        ])
                    }),
                ])
                let response = try await send("assets/upload", body: body, zoneID: zoneID)
                let tokens = try Self.items(response, "tokens", count: page.count)
                for (slot, token) in zip(page, tokens) {
                    guard let text = token["url"]?.string, let url = URL(string: text) else {
                        throw NimbusError.malformedResponse("an assets/upload token has no valid 'url'")
                    }
                    urls[slot, default: []].append(url)
                }
            }
        }
        return urls
    }

    /// How many times an upload continues after the connection broke before it gives up.
    static let maxUploadResumes = 3

    /// Uploads `file` to an upload URL and returns the server's `singleFile` (with its receipt).
    ///
    /// The first attempt `POST`s the whole file, as CloudKit clients do. When the connection
    /// breaks (or `resuming`, for an upload an earlier run started), it asks the URL how many
    /// bytes the server holds (Nimbus's resumable extension) and `PUT`s only the rest.
    ///
    /// - Throws: ``NimbusError/Code/assetFileNotFound`` when the file cannot be read,
    ///   ``NimbusError/Code/limitExceeded`` when it is larger than the server allows,
    ///   ``NimbusError/Code/invalidArguments`` when the URL expired or was used (request a
    ///   new one), network errors after ``maxUploadResumes`` failed resumptions.
    package func uploadFile(
        _ file: URL, to url: URL, resuming: Bool = false, progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws -> NimbusProtocol.Asset {
        try await upload(size: try AssetFile.size(of: file), of: file, to: url, resuming: resuming, progress: progress) {
            request, range, report in
            try await container.assetTransport.upload(request, file: file, range: range, progress: report)
        }
    }

    /// ``uploadFile(_:to:resuming:progress:)`` of `size` bytes that `send` sends (the bytes
    /// `range` of the body, with the request it is given): the file's own, or its ciphertext.
    func upload(
        size: Int64, of file: URL, to url: URL, resuming: Bool, progress: (@Sendable (TransferProgress) -> Void)?,
        send: (TransportRequest, Range<Int64>, @escaping @Sendable (Int64) -> Void) async throws -> TransportResponse
    ) async throws -> NimbusProtocol.Asset {
        var askFirst = resuming
        var broken = 0
        while true {
            if Task.isCancelled { throw NimbusError.cancelled() }
            do {
                var offset: Int64 = 0
                if askFirst {
                    switch try await uploadStatus(url) {
                    case .finished(let singleFile): return try checked(singleFile, size: size, file: file)
                    case .received(let received): offset = received <= size ? received : 0
                    }
                }
                let start = offset
                progress?(TransferProgress(completedBytes: start, totalBytes: size))
                var request = TransportRequest(
                    method: offset == 0 ? .post : .put, url: url,
                    headers: ["Content-Type": "application/octet-stream", "Accept": "application/json"],
                    timeout: container.assetTimeout)
                if offset > 0 { request.headers["Content-Range"] = "bytes \(offset)-\(size - 1)/\(size)" }
                let response = try await send(
                    request, offset..<size, { sent in progress?(TransferProgress(completedBytes: start + sent, totalBytes: size)) })
                if response.status == 409 || response.status == 202 {
                    // Another offset than the server's, or not the end yet: ask and go on.
                    broken += 1
                    askFirst = true
                    if broken > Self.maxUploadResumes { throw NimbusError(httpStatus: response.status, body: response.body, headers: response.headers, zoneID: nil) }
                    continue
                }
                guard (200..<300).contains(response.status) else {
                    throw NimbusError(httpStatus: response.status, body: response.body, headers: response.headers, zoneID: nil)
                }
                return try checked(try Self.singleFile(response.body), size: size, file: file)
            } catch let error as NimbusError
                where (error.code == .networkFailure || error.code == .networkUnavailable) && broken < Self.maxUploadResumes
                    && !Task.isCancelled
            {
                broken += 1
                askFirst = true
            } catch let error as NimbusError {
                throw Task.isCancelled ? NimbusError.cancelled() : error
            } catch {
                if error is CancellationError || Task.isCancelled { throw NimbusError.cancelled() }
                throw NimbusError(.networkFailure, "the upload failed: \(error)")
            }
        }
    }

    /// What an upload URL holds.
    enum UploadStatus {
        case received(Int64)
        case finished(NimbusProtocol.Asset)
    }

    /// `GET` of an upload URL (Nimbus's resumable extension).
    func uploadStatus(_ url: URL) async throws -> UploadStatus {
        let response = try await container.transport.send(
            TransportRequest(method: .get, url: url, headers: ["Accept": "application/json"], timeout: container.requestTimeout))
        guard (200..<300).contains(response.status) else {
            throw NimbusError(httpStatus: response.status, body: response.body, headers: response.headers, zoneID: nil)
        }
        let json: JSON
        do { json = try JSON.parse(Array(response.body)) } catch { throw NimbusError.malformedResponse("\(error)") }
        if json["singleFile"] != nil { return .finished(try Self.singleFile(response.body)) }
        guard let received = json["receivedBytes"]?.int64 else {
            throw NimbusError.malformedResponse("the upload status has neither 'singleFile' nor 'receivedBytes'")
        }
        return .received(received)
    }

    static func singleFile(_ body: Data) throws -> NimbusProtocol.Asset {
        do {
            let json = try JSON.parse(Array(body))
            guard let singleFile = json["singleFile"] else {
                throw NimbusError.malformedResponse("the upload's answer has no 'singleFile'")
            }
            return try NimbusProtocol.Asset(wire: WireReader(singleFile))
        } catch let error as NimbusError {
            throw error
        } catch let error as CloudKitError {
            throw NimbusError.malformedResponse(error.reason)
        } catch {
            throw NimbusError.malformedResponse("\(error)")
        }
    }

    private func checked(_ singleFile: NimbusProtocol.Asset, size: Int64, file: URL) throws -> NimbusProtocol.Asset {
        guard singleFile.size == size, singleFile.receipt != nil else {
            throw NimbusError(
                .assetFileModified,
                "the server received \(singleFile.size) bytes of \(file.path), which has \(size) now: "
                    + "the file changed during the upload; save the record again")
        }
        return singleFile
    }

    // MARK: - Saving records with assets

    /// The local files `record`'s save under `policy` would send, by field.
    static func localAssets(of record: Record, policy: SavePolicy) -> [(field: String, files: [URL])] {
        var result: [(field: String, files: [URL])] = []
        for (field, value) in record.saveOperation(policy: policy).fields.sorted(by: { $0.key < $1.key }) {
            let files = value.localAssetFiles
            if !files.isEmpty { result.append((field, files)) }
        }
        return result
    }

    /// `records` with every local file their saves would send uploaded and replaced by the
    /// server's `singleFile` (its receipt attaches the upload to the record). Records without
    /// local files are returned as they are.
    func uploadingAssets(
        of records: [Record], policy: SavePolicy,
        progress: (@Sendable (Record.ID, String, TransferProgress) -> Void)?
    ) async throws -> [Record] {
        var slots: [AssetSlot] = []
        var wanted: [Record.ID: [(field: String, files: [URL])]] = [:]
        for record in records {
            let assets = Self.localAssets(of: record, policy: policy)
            guard !assets.isEmpty else { continue }
            wanted[record.id] = assets
            for (field, files) in assets {
                slots += files.map { _ in AssetSlot(recordID: record.id, recordType: record.recordType, fieldName: field) }
            }
        }
        guard !slots.isEmpty else { return records }
        // Missing files fail before anything is asked of the server.
        for assets in wanted.values { for (_, files) in assets { for file in files { _ = try AssetFile.size(of: file) } } }
        var urls = try await requestUploadURLs(for: slots)
        return try await records.asyncMap { record in
            guard let assets = wanted[record.id] else { return record }
            var copy = record
            for (field, files) in assets {
                let slot = AssetSlot(recordID: record.id, recordType: record.recordType, fieldName: field)
                var uploaded: [URL: Asset] = [:]
                for file in files where uploaded[file] == nil {
                    guard let url = urls[slot]?.popLast() else {
                        throw NimbusError.malformedResponse("assets/upload answered too few upload URLs")
                    }
                    let id = record.id
                    let report: (@Sendable (TransferProgress) -> Void)? = progress.map { report in
                        { @Sendable transfer in report(id, field, transfer) }
                    }
                    let singleFile = try await uploadAsset(file, for: slot, to: url, progress: report)
                    uploaded[file] = Asset(serverValue: singleFile)
                }
                if let value = copy.fieldValue(forKey: field) {
                    copy.setFieldValue(value.mappingSDKAssets { asset in asset.fileURL.flatMap { uploaded[$0] } ?? asset }, forKey: field)
                }
            }
            return copy
        }
    }
}

extension Array where Element: Sendable {
    /// `transform` applied to each element in order, awaiting each.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        result.reserveCapacity(count)
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
