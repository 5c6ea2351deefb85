import Foundation
import NimbusProtocol

/// A file stored with a record: a photo, an attachment, a document. The SDK's counterpart of
/// `CKAsset`.
///
/// Create one from a local file and put it in a field; saving the record uploads the file
/// first (``Database/save(_:savePolicy:)`` and ``ModifyRecordsOperation`` do it in one call):
///
/// ```swift
/// var article = Record(recordType: "Article")
/// article["thumbnail"] = Asset(fileURL: URL(fileURLWithPath: "/tmp/cover.jpg"))
/// try await database.save(article)
/// ```
///
/// A fetched record's asset carries the server's description of the file (``size``,
/// ``fileChecksum``, ``downloadURL``) but not its bytes; download them when needed:
///
/// ```swift
/// let fetched = try await database.record(for: article.id)
/// if let thumbnail: Asset = fetched["thumbnail"] {
///     let file = try await database.download(thumbnail, to: cachesDirectory.appendingPathComponent("cover.jpg"))
/// }
/// ```
public struct Asset: Sendable, Hashable, CustomStringConvertible {
    /// The local file this asset was created from; `nil` for an asset fetched from the server.
    public let fileURL: URL?
    /// The server's value (checksum, size, download URL); `nil` for a file not uploaded yet.
    package let serverValue: NimbusProtocol.Asset?

    /// An asset backed by a local file, uploaded when a record holding it is saved. The file
    /// must exist and stay unchanged until then.
    public init(fileURL: URL) {
        self.fileURL = fileURL.standardizedFileURL
        self.serverValue = nil
    }

    /// An asset the server described (fetched, or answered by an upload).
    package init(serverValue: NimbusProtocol.Asset) {
        self.fileURL = nil
        self.serverValue = serverValue
    }

    /// The file's length in bytes, as the server stored it (`nil` before the upload).
    public var size: Int64? { serverValue?.size }

    /// The base64 SHA-256 of the file's bytes, as the server stored it (`nil` before the upload).
    public var fileChecksum: String? { serverValue?.fileChecksum }

    /// Where a plain `GET` reads the bytes (signed and expiring; Apple's `${f}` file-name
    /// placeholder replaced). `nil` before the upload.
    public var downloadURL: URL? {
        guard let text = serverValue?.downloadURL, !text.hasPrefix("file:") else { return nil }
        return URL(string: text.replacingOccurrences(of: NimbusProtocol.Asset.fileNamePlaceholder, with: "file"))
    }

    /// Whether the file still has to be uploaded (an asset created with ``init(fileURL:)``).
    public var needsUpload: Bool { serverValue == nil }

    public var description: String {
        if let fileURL { return "Asset(file: \(fileURL.path))" }
        return "Asset(\(size ?? 0) bytes, \(fileChecksum ?? "-"))"
    }
}

extension Asset: RecordListElement {
    public static var fieldType: FieldType { .asset }

    /// A local file travels in a field value as an ASSET dictionary whose `downloadURL` is the
    /// `file:` URL and whose checksum is ``localFileChecksum``: the upload replaces it with the
    /// server's `singleFile` before anything is sent. (The sync engine's outbox keeps it so.)
    public init?(fieldValue: FieldValue) {
        guard case .asset(let value) = fieldValue else { return nil }
        if value.fileChecksum == Self.localFileChecksum, let text = value.downloadURL, text.hasPrefix("file:"),
            let url = URL(string: text)
        {
            self.init(fileURL: url)
        } else {
            self.init(serverValue: value)
        }
    }

    public var fieldValue: FieldValue {
        if let serverValue { return .asset(serverValue) }
        return .asset(NimbusProtocol.Asset(
            fileChecksum: Self.localFileChecksum, size: 0, downloadURL: fileURL?.absoluteString))
    }

    /// The checksum that marks a field value as a local file waiting for its upload. No
    /// server answers it (server checksums are base64), and a server refuses it if sent.
    package static let localFileChecksum = "nimbus-local-file"
}

extension FieldValue {
    /// The assets this value holds: the one of an `ASSET`, each element of an `ASSET_LIST`,
    /// in order; none for any other type.
    package var sdkAssets: [Asset] {
        switch self {
        case .asset: return Asset(fieldValue: self).map { [$0] } ?? []
        case .list(let type, let values) where type == .asset: return values.flatMap(\.sdkAssets)
        default: return []
        }
    }

    /// The local files this value names that still have to be uploaded.
    package var localAssetFiles: [URL] { sdkAssets.compactMap(\.fileURL) }

    /// Whether two values hold the same data: assets compare by what identifies their
    /// bytes, not by their download URLs (signed anew by every read).
    package func sameData(as other: FieldValue?) -> Bool {
        guard let other else { return false }
        if self == other { return true }
        guard type == other.type, !assets.isEmpty else { return false }
        return withoutDownloadURLs == other.withoutDownloadURLs
    }

    private var withoutDownloadURLs: FieldValue {
        mappingSDKAssets { asset in asset.serverValue.map { Asset(serverValue: $0.stored) } ?? asset }
    }

    /// The value with each asset replaced by `transform`'s result.
    package func mappingSDKAssets(_ transform: (Asset) throws -> Asset) rethrows -> FieldValue {
        switch self {
        case .asset: return try Asset(fieldValue: self).map { try transform($0).fieldValue } ?? self
        case .list(let type, let values) where type == .asset:
            return .list(elementType: type, try values.map { try $0.mappingSDKAssets(transform) })
        default: return self
        }
    }
}

/// How far a transfer of asset bytes got.
public struct TransferProgress: Sendable, Hashable {
    /// Bytes sent or received so far (including what an earlier, resumed transfer moved).
    public var completedBytes: Int64
    /// The file's length.
    public var totalBytes: Int64

    public init(completedBytes: Int64, totalBytes: Int64) {
        self.completedBytes = completedBytes
        self.totalBytes = totalBytes
    }

    /// `completedBytes / totalBytes` (1 for an empty file).
    public var fractionCompleted: Double {
        totalBytes > 0 ? Double(completedBytes) / Double(totalBytes) : 1
    }
}
