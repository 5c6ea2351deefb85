import ArgumentParser
import NimbusStore

/// Where `nimbus serve` keeps asset bytes, and how downloads reach them.
struct AssetStorageOptions: ParsableArguments {
    @Option(
        name: .customLong("assets"),
        help: ArgumentHelp(
            """
            Where asset bytes live: file:///shared/dir (a directory every node mounts) or \
            s3://bucket/prefix?endpoint=URL&region=REGION&style=path|virtual (an S3-compatible store; credentials \
            from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN). Default: DIR/assets, or PostgreSQL itself.
            """, valueName: "location"))
    var assets: String?

    @Option(
        name: .customLong("assets-previous"),
        help: ArgumentHelp(
            "Where asset bytes were before --assets changed: read from there until `nimbus assets migrate` has copied them.",
            valueName: "location"))
    var assetsPrevious: String?

    @Flag(
        name: .customLong("asset-download-redirect"),
        help: "Answer an authorised download with a redirect to the object store's pre-signed URL (s3:// only).")
    var redirect = false

    /// `--assets` (or `--asset-directory`, its older spelling), checked.
    func location(directory: String?) throws -> AssetLocation { try Self.location(assets: assets, directory: directory) }

    /// An `--assets` value or an `--asset-directory` (not both), checked; neither is the engine's default.
    static func location(assets: String?, directory: String?) throws -> AssetLocation {
        if let directory {
            guard assets == nil else { throw ValidationError("pass --assets or --asset-directory, not both") }
            return .directory(directory)
        }
        return try Self.parse(assets, flag: "--assets") ?? .engineDefault
    }

    /// `--assets-previous`, checked.
    func previousLocation() throws -> AssetLocation? { try Self.parse(assetsPrevious, flag: "--assets-previous") }

    static func parse(_ text: String?, flag: String) throws -> AssetLocation? {
        guard let text else { return nil }
        do {
            return try AssetLocation(parsing: text)
        } catch {
            throw ValidationError("\(flag): \(error.message)")
        }
    }
}
