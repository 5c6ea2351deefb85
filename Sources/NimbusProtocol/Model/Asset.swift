/// An ASSET field value: a file stored beside a record, as CloudKit's Asset dictionary
/// describes it.
///
/// The same dictionary travels three ways:
/// - out of an upload (`singleFile`): ``fileChecksum``, ``size`` and the ``receipt`` that
///   proves the bytes were received;
/// - into `records/modify` as an `ASSETID` value: the `singleFile` dictionary as it came
///   (the ``receipt`` attaches the upload to the record; without one, the value must name an
///   asset this database already holds, as an unchanged field sent back does);
/// - out of lookups, queries and change feeds as an `ASSET` value: ``fileChecksum``,
///   ``size`` and a ``downloadURL`` that a plain `GET` fetches (it carries Apple's `${f}`
///   file-name placeholder, which the client replaces with a file name of its choice).
///
/// ``wrappingKey`` and ``referenceChecksum`` (Apple's client-side encryption) are kept as
/// the client sent them and returned unchanged: an encrypting client (the SDK, with keys set
/// up) uploads the ciphertext and puts the wrapped file key there (docs/ENCRYPTION.md).
public struct Asset: Sendable, Hashable, Codable {
    /// The base64 of the SHA-256 of the file's bytes, as the upload answered it.
    public var fileChecksum: String
    /// The file's length in bytes.
    public var size: Int64
    /// The upload's receipt: present on input (`ASSETID`), never stored or returned by reads.
    public var receipt: String?
    /// Opaque to the server: kept and returned as sent.
    public var referenceChecksum: String?
    /// Opaque to the server: kept and returned as sent.
    public var wrappingKey: String?
    /// Where a `GET` reads the bytes: present on output only, signed and expiring.
    public var downloadURL: String?

    public init(
        fileChecksum: String, size: Int64, receipt: String? = nil, referenceChecksum: String? = nil,
        wrappingKey: String? = nil, downloadURL: String? = nil
    ) {
        self.fileChecksum = fileChecksum
        self.size = size
        self.receipt = receipt
        self.referenceChecksum = referenceChecksum
        self.wrappingKey = wrappingKey
        self.downloadURL = downloadURL
    }

    /// The value as a record stores it: what identifies the bytes, without the receipt
    /// (single-use, spent by the save) or a download URL (made per reader).
    public var stored: Asset {
        Asset(fileChecksum: fileChecksum, size: size, referenceChecksum: referenceChecksum, wrappingKey: wrappingKey)
    }

    /// Apple's file-name placeholder in a ``downloadURL``.
    public static let fileNamePlaceholder = "${f}"
}
