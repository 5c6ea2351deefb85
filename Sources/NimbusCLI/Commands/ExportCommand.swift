import ArgumentParser
import Foundation
import NimbusEngines
import NimbusProtocol
import NimbusStore

/// `nimbus export`: a container's zones, records and asset files written to a directory
/// (``ContainerExport``; docs/OPERATIONS.md, "Exporting a container").
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a container's zones, records (CloudKit JSON, one JSON Lines file per zone) and asset files to a directory.",
        discussion: """
            Every database of both environments: the public one and each user's private one. Encrypted fields and \
            encrypted assets are written as the server holds them: ciphertext. The server may keep running; each \
            zone is read page by page, so an export taken while devices write is consistent per page, not as a whole.
            """)

    @Option(name: .long, help: "The container identifier, e.g. iCloud.com.example.app")
    var container: String

    @Option(name: .long, help: "The directory to write (created; it must not exist or be empty).")
    var out: String

    @Option(
        name: .customLong("assets"),
        help: ArgumentHelp(
            "Where the server keeps asset bytes (its --assets: file:///dir or s3://bucket/prefix?…), if not the engine's default.",
            valueName: "location"))
    var assets: String?

    @Option(name: .long, help: "The asset directory the server runs with (its --asset-directory, the older spelling of --assets file://).")
    var assetDirectory: String?

    @OptionGroup var data: DataOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let location = try AssetStorageOptions.location(assets: assets, directory: assetDirectory)
        let summary = try await withStore(data) { store in
            let assets = try data.location.openAssets(for: store, at: location)
            return try await ContainerExport.write(
                container: container, from: store, assets: assets, to: URL(fileURLWithPath: out, isDirectory: true))
        }
        emit(
            output, json: summary.json,
            text: "exported \(container) to \(out): \(summary.databases) databases, \(summary.zones) zones, "
                + "\(summary.records) records, \(summary.assets) asset files (\(summary.assetBytes) bytes)"
                + (summary.missingAssets > 0 ? ", \(summary.missingAssets) asset files missing from the store" : ""))
    }
}
