import Crypto
import Foundation
import Nimbus
import NimbusCrypto
import NimbusProtocol
import NimbusTestSupport
import Testing

/// The chunked asset formats (a key per chunk, sealed as the upload sends it, opened as the
/// download receives it; version 3 written, version 2 read and resumed) against a real
/// server: several chunks, reads across their boundaries, uploads and downloads that resume, a
/// file that changes while it is sealed, and files of the first two formats, which still open.
@Suite("Encrypted asset format")
struct EncryptedAssetFormatTests {
    typealias Device = EncryptedValuesTests.Device
    static let zone = EncryptedAssetTests.zone
    static let chunk = AssetChunks.defaultChunkSize

    static func device(_ live: LiveServer, transport: (any AssetTransport)? = nil) async throws -> Device {
        var phone = try await EncryptedValuesTests.device(live, user: "alice")
        if let transport {
            phone.container = Container(
                identifier: phone.container.identifier, baseURL: live.baseURL,
                credentials: .apiToken(live.apiToken, webAuthToken: phone.token), assetTransport: transport)
            phone.container.encryption = EncryptionKeys(store: FileKeyStore(directory: phone.keysDirectory))
        }
        try await phone.container.encryption!.setUp(in: phone.container)
        try await phone.database.save(RecordZone(zoneID: zone))
        return phone
    }

    @Test func aFileOfSeveralChunksRoundTripsAndReadsAcrossChunkBoundaries() async throws {
        try await LiveServer.with { live in
            let phone = try await Self.device(live)
            let (file, plaintext) = try EncryptedAssetTests.photo("MARKER-chunks", count: 3 * Self.chunk + 1234)
            let saved = try await phone.database.save(EncryptedAssetTests.photoRecord("p1", file))
            let asset = try #require(saved["photo"] as Nimbus.Asset?)
            let layout = AssetChunks.Layout(plaintextSize: Int64(plaintext.count))
            #expect(asset.size == layout.sealedSize && layout.chunkCount == 4)
            let blob = try Data(contentsOf: URL(fileURLWithPath: try EncryptedAssetTests.blobFile(live, asset)))
            #expect(blob.first == AssetChunks.version)

            let target = EncryptedAssetTests.temporaryFile()
            try await phone.database.download(asset, to: target)
            #expect(try Data(contentsOf: target) == plaintext)
            for range in [Self.chunk - 10..<Self.chunk + 10, 1..<2 * Self.chunk + 5, 3 * Self.chunk..<3 * Self.chunk + 1234, 0..<plaintext.count] {
                #expect(try await phone.database.bytes(of: asset, in: Int64(range.lowerBound)..<Int64(range.upperBound)) == plaintext[range])
            }
            // An empty file too.
            let empty = FileManager.default.temporaryDirectory.appendingPathComponent("empty-\(UUID().uuidString)")
            try Data().write(to: empty)
            let none = try #require(try await phone.database.save(EncryptedAssetTests.photoRecord("p0", empty))["photo"] as Nimbus.Asset?)
            let emptyTarget = EncryptedAssetTests.temporaryFile()
            try await phone.database.download(none, to: emptyTarget)
            #expect(try Data(contentsOf: emptyTarget).isEmpty)
        }
    }

    @Test func anUploadCutHalfWayResumesAndADownloadContinuesAfterItsWholeChunks() async throws {
        try await LiveServer.with { live in
            let cutting = CuttingAssetTransport(cutUploadsAt: 0.5)
            let phone = try await Self.device(live, transport: cutting)
            let (file, plaintext) = try EncryptedAssetTests.photo("MARKER-resume", count: 2 * Self.chunk + 500)
            let saved = try await phone.database.save(EncryptedAssetTests.photoRecord("p1", file))
            let asset = try #require(saved["photo"] as Nimbus.Asset?)
            let layout = AssetChunks.Layout(plaintextSize: Int64(plaintext.count))
            let half = Int64(Double(layout.sealedSize) * 0.5)
            // The second request sealed only what the server did not hold (this transport
            // sends a made body from a file of its own: the range is that file's).
            #expect(cutting.uploadedRanges == [0..<half, 0..<layout.sealedSize - half])
            // Saved once more: the same ciphertext (stored once).
            let again = try #require(try await phone.database.save(EncryptedAssetTests.photoRecord("p2", file))["photo"] as Nimbus.Asset?)
            #expect(again.fileChecksum == asset.fileChecksum)

            // The streamed ciphertext is the format's, byte for byte.
            let (zoneKey, _) = try await phone.database.encryptionKeys().sealingKey(for: Self.zone, in: phone.database)
            let (sealed, tableKey) = try AssetChunks.seal(Array(plaintext), secrets: AssetChunks.Secrets(zoneKey: zoneKey))
            let blob = try Data(contentsOf: URL(fileURLWithPath: try EncryptedAssetTests.blobFile(live, asset)))
            #expect(blob == Data(sealed))

            // A download that finds 1.5 opened chunks left from an interrupted run (in the
            // partial file named for the file's key table): it keeps the whole chunk and asks
            // for the rest.
            let keys = try AssetChunks.openTable(sealed[Int(layout.tableOffset)...], layout: layout, tableKey: tableKey)
            let name = SHA256.hash(data: keys).prefix(8).map { String(format: "%02x", $0) }.joined()
            let target = EncryptedAssetTests.temporaryFile()
            let partial = target.deletingLastPathComponent().appendingPathComponent(target.lastPathComponent + ".opening-" + name)
            try plaintext.prefix(Self.chunk + Self.chunk / 2).write(to: partial)
            try await phone.database.download(asset, to: target)
            #expect(try Data(contentsOf: target) == plaintext)
            #expect(cutting.downloadRanges.last == "bytes=\(layout.chunkOffset(1))-\(layout.tableOffset - 1)")
            #expect(!FileManager.default.fileExists(atPath: partial.path))
        }
    }

    /// Cut in the last of three runs of chunks, at a chunk boundary's neighbour and mid-chunk:
    /// the resumed body starts exactly where the server stopped (the runs before it only
    /// hashed for their keys, the run it falls in sent from inside a sealed chunk), and the
    /// stored file is the format's byte for byte.
    @Test(arguments: [0.5, 0.93])
    func anUploadResumedAfterWholeRunsSendsExactlyTheRest(cut: Double) async throws {
        try await LiveServer.with { live in
            let cutting = CuttingAssetTransport(cutUploadsAt: cut)
            let phone = try await Self.device(live, transport: cutting)
            let (file, plaintext) = try EncryptedAssetTests.photo("MARKER-runs", count: 10 * Self.chunk + 777)
            let saved = try await phone.database.save(EncryptedAssetTests.photoRecord("p1", file))
            let asset = try #require(saved["photo"] as Nimbus.Asset?)
            let layout = AssetChunks.Layout(plaintextSize: Int64(plaintext.count))
            let sent = Int64(Double(layout.sealedSize) * cut)
            #expect(cutting.uploadedRanges == [0..<sent, 0..<layout.sealedSize - sent])
            let (zoneKey, _) = try await phone.database.encryptionKeys().sealingKey(for: Self.zone, in: phone.database)
            let (sealed, _) = try AssetChunks.seal(Array(plaintext), secrets: AssetChunks.Secrets(zoneKey: zoneKey))
            let blob = try Data(contentsOf: URL(fileURLWithPath: try EncryptedAssetTests.blobFile(live, asset)))
            #expect(blob == Data(sealed))
            let target = EncryptedAssetTests.temporaryFile()
            try await phone.database.download(asset, to: target)
            #expect(try Data(contentsOf: target) == plaintext)
        }
    }

    @Test func aFileThatChangesWhileItIsSealedIsNotSaved() async throws {
        try await LiveServer.with { live in
            let (file, _) = try EncryptedAssetTests.photo("MARKER-changing", count: 2 * Self.chunk)
            let phone = try await Self.device(live, transport: ChangingFileTransport(file: file))
            let error = try await #require(throws: NimbusError.self) {
                _ = try await phone.database.save(EncryptedAssetTests.photoRecord("p1", file))
            }
            #expect(error.code == .assetFileModified, "\(error)")
            let lookup = try await #require(throws: NimbusError.self) {
                _ = try await phone.database.record(for: Nimbus.Record.ID(recordName: "p1", zoneID: Self.zone))
            }
            #expect(lookup.code == .unknownItem)
        }
    }

    @Test func aFileOfTheFirstFormatStillOpens() async throws {
        try await LiveServer.with { live in
            let phone = try await Self.device(live)
            let (file, plaintext) = try EncryptedAssetTests.photo("MARKER-v1", count: 300_000)
            // A version 1 file, as an earlier build sealed it: one convergent key per file.
            let database = phone.database
            let (zoneKey, owner) = try await database.encryptionKeys().sealingKey(for: Self.zone, in: database)
            let fileKey = AssetFileKey.convergent(zoneKey: zoneKey, plaintextDigest: Array(SHA256.hash(data: plaintext)))
            let sealedFile = EncryptedAssetTests.temporaryFile()
            try Data(try AssetSealing.seal(Array(plaintext), with: fileKey)).write(to: sealedFile)
            let id = Nimbus.Record.ID(recordName: "old", zoneID: Self.zone)
            let slot = Database.AssetSlot(recordID: id, recordType: "Photo", fieldName: "photo")
            let url = try #require(try await database.requestUploadURLs(for: [slot])[slot]?.first)
            var singleFile = try await database.uploadFile(sealedFile, to: url)
            let place = FieldPlace(
                container: LiveServer.containerID, zoneName: Self.zone.zoneName, ownerRecordName: owner, recordName: "old",
                fieldName: "photo")
            let wrapped = try WrappedAssetKey.wrap(fileKey, with: zoneKey, for: place)
            singleFile.wrappingKey = Data(wrapped.bytes).base64EncodedString()
            singleFile.referenceChecksum = wrapped.referenceChecksum
            var record = Nimbus.Record(recordType: "Photo", recordID: id)
            record["photo"] = Nimbus.Asset(serverValueForTest: singleFile)
            _ = try await database.save(record)

            let fetched = try #require(try await database.record(for: id)["photo"] as Nimbus.Asset?)
            #expect(fetched.size == AssetSealing.sealedSize(plaintextSize: Int64(plaintext.count)))
            let target = EncryptedAssetTests.temporaryFile()
            try await database.download(fetched, to: target)
            #expect(try Data(contentsOf: target) == plaintext)
            #expect(try await database.bytes(of: fetched, in: 65_000..<140_000) == plaintext[65_000..<140_000])
        }
    }

    /// An upload an earlier build began in version 2, continued by this build after a cut:
    /// it stays version 2 (the bytes the server holds remain part of the file), byte for byte,
    /// and the saved record's asset opens, whole and by range.
    @Test func anUploadBegunInTheSecondFormatResumesInItAndOpens() async throws {
        try await LiveServer.with { live in
            let cutting = CuttingAssetTransport(cutUploadsAt: 0.5)
            let phone = try await Self.device(live, transport: cutting)
            let database = phone.database
            let (file, plaintext) = try EncryptedAssetTests.photo("MARKER-v2-resumed", count: 3 * Self.chunk + 100)
            let id = Nimbus.Record.ID(recordName: "resumed", zoneID: Self.zone)
            let slot = Database.AssetSlot(recordID: id, recordType: "Photo", fieldName: "photo")
            let url = try #require(try await database.requestUploadURLs(for: [slot])[slot]?.first)
            let singleFile = try await database.uploadAsset(file, for: slot, to: url, resuming: true, format: 2)
            let layout = AssetChunks.Layout(plaintextSize: Int64(plaintext.count), version: 2)
            let half = Int64(Double(layout.sealedSize) * 0.5)
            #expect(cutting.uploadedRanges == [0..<half, 0..<layout.sealedSize - half])
            var record = Nimbus.Record(recordType: "Photo", recordID: id)
            record["photo"] = Nimbus.Asset(serverValueForTest: singleFile)
            _ = try await database.save(record)
            let fetched = try #require(try await database.record(for: id)["photo"] as Nimbus.Asset?)
            let (zoneKey, _) = try await database.encryptionKeys().sealingKey(for: Self.zone, in: database)
            let (sealed, _) = try AssetChunks.seal(Array(plaintext), secrets: AssetChunks.Secrets(zoneKey: zoneKey, version: 2))
            let blob = try Data(contentsOf: URL(fileURLWithPath: try EncryptedAssetTests.blobFile(live, fetched)))
            #expect(blob == Data(sealed))
            let target = EncryptedAssetTests.temporaryFile()
            try await database.download(fetched, to: target)
            #expect(try Data(contentsOf: target) == plaintext)
            let range = Int64(Self.chunk - 10)..<Int64(2 * Self.chunk + 10)
            #expect(try await database.bytes(of: fetched, in: range) == plaintext[Int(range.lowerBound)..<Int(range.upperBound)])
            // A format this build cannot continue is refused before a byte is sent.
            let error = try await #require(throws: NimbusError.self) {
                _ = try await database.uploadAsset(file, for: slot, to: url, resuming: true, format: 1)
            }
            #expect(error.code == .invalidArguments, "\(error)")
        }
    }
}

/// The real streaming transport, except that it changes the asset's file (same length, other
/// bytes) just before an upload's body is made.
final class ChangingFileTransport: AssetTransport {
    private let base = HTTPClientTransport()
    let file: URL

    init(file: URL) {
        self.file = file
    }

    func upload(
        _ request: TransportRequest, file: URL, range: Range<Int64>, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> TransportResponse {
        try await base.upload(request, file: file, range: range, progress: progress)
    }

    func upload(
        _ request: TransportRequest, body: AssetUploadBody, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> TransportResponse {
        var bytes = try Data(contentsOf: file)
        bytes[bytes.count - 10] ^= 0xFF
        try bytes.write(to: file)
        return try await base.upload(request, body: body, progress: progress)
    }

    func download(
        _ request: TransportRequest, into file: URL, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> TransportResponse {
        try await base.download(request, into: file, progress: progress)
    }
}
