import Foundation
import Nimbus

/// Where fetched assets' bytes are kept: one file per server checksum under the temporary
/// directory, as CloudKit keeps them in its own cache (apps copy what they want to keep).
enum AssetCache {
    static var directory: URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("NimbusCloudKit-assets", isDirectory: true)
    }

    /// The cache file for a fetched asset (whether or not it was downloaded yet).
    static func location(for asset: Nimbus.Asset) -> URL? {
        guard let checksum = asset.fileChecksum else { return nil }
        let name = checksum.map { $0 == "/" ? "_" : $0 == "+" ? "-" : $0 }
        return directory.appendingPathComponent(String(name))
    }

    /// The downloaded file of a fetched asset, or `nil` when its bytes are not here.
    static func file(for asset: Nimbus.Asset) -> URL? {
        guard let url = location(for: asset), FileManager.default.fileExists(atPath: url.path) else { return nil }
        return url
    }
}
