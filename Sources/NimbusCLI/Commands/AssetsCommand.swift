import ArgumentParser
import Foundation
import NimbusEngines
import NimbusStore

/// `nimbus assets …`: the asset bytes' storage.
struct AssetsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "assets", abstract: "Manage where asset bytes live.", subcommands: [AssetsMigrateCommand.self])
}

/// `nimbus assets migrate --to LOCATION`: copies every asset blob to another backend while the
/// servers keep serving (see docs/DEPLOYMENT.md for the whole move).
struct AssetsMigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Copy every asset blob to another backend (verifying each hash); run again to finish, then delete the old.",
        discussion: """
            A move while serving: (1) `nimbus assets migrate --to NEW`; (2) restart every node with \
            `--assets NEW --assets-previous OLD` (new bytes go to NEW, missing ones are read from OLD); \
            (3) `nimbus assets migrate --to NEW --delete-source` copies what arrived meanwhile and deletes \
            each blob from OLD once NEW holds it; (4) restart without --assets-previous. Every run is safe \
            to repeat: blobs NEW already holds are skipped.
            """)

    @OptionGroup var data: DataOptions

    @Option(name: .long, help: ArgumentHelp("Where the blobs are now (default: the engine's default).", valueName: "location"))
    var from: String?

    @Option(name: .long, help: ArgumentHelp("Where the blobs go: file:///dir, s3://bucket/prefix?…, or default.", valueName: "location"))
    var to: String

    @Flag(name: .long, help: "Delete each blob from the source once the target holds it.")
    var deleteSource = false

    func run() async throws {
        let source = try AssetStorageOptions.parse(from, flag: "--from") ?? .engineDefault
        guard let target = try AssetStorageOptions.parse(to, flag: "--to") else { throw ValidationError("--to is required") }
        guard source != target else { throw ValidationError("--from and --to name the same location (\(target))") }
        let report = try await withStore(data) { store in
            let migration = AssetMigration(
                from: try data.location.openAssets(for: store, at: source),
                to: try data.location.openAssets(for: store, at: target))
            return try await migration.run(deleteSource: deleteSource) { _, report in
                let handled = report.copied + report.present + report.corrupt.count
                if handled % 100 == 0 { print("… \(handled) blobs (\(report.copied) copied, \(report.bytes) bytes)") }
            }
        }
        print(
            "copied \(report.copied) blobs (\(report.bytes) bytes), \(report.present) already there"
                + (deleteSource ? ", deleted \(report.deleted) from the source" : "") + " (\(source) → \(target))")
        if !report.corrupt.isEmpty {
            print("NOT copied, bytes not matching their hash (kept at the source): \(report.corrupt.map(\.description).joined(separator: ", "))")
            throw ExitCode(2)
        }
    }
}
