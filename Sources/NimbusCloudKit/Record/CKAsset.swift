import Foundation
import Nimbus
import NimbusProtocol

/// A file stored with a record: create one from a local file and put it in a field; saving
/// the record uploads the file.
///
/// ```swift
/// record["photo"] = CKAsset(fileURL: imageURL)
/// ```
///
/// A fetched asset's bytes are downloaded with the record (as CloudKit does) into a cache
/// directory; ``fileURL`` is that file.
public final class CKAsset: NSObject, Sendable {
    /// The asset's local file.
    public let fileURL: URL?
    /// The SDK's asset (server checksum and download URL for a fetched asset).
    let asset: Nimbus.Asset

    public init(fileURL: URL) {
        self.fileURL = fileURL
        self.asset = Nimbus.Asset(fileURL: fileURL)
    }

    /// A fetched asset and the local file its bytes were downloaded to (if they were).
    init(asset: Nimbus.Asset, localFile: URL?) {
        self.fileURL = asset.fileURL ?? localFile
        self.asset = asset
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CKAsset else { return false }
        return asset == other.asset && fileURL == other.fileURL
    }

    public override var hash: Int { asset.hashValue }

    public override var description: String { "<CKAsset: \(fileURL?.path ?? "not downloaded")>" }
}
