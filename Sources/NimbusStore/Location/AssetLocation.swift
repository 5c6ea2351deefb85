import Foundation

/// Where a server keeps asset bytes, as `nimbus serve --assets` names it.
///
/// ```swift
/// configuration.assets.location = try AssetLocation(parsing: "file:///mnt/shared/nimbus-assets")
/// configuration.assets.location = try AssetLocation(
///     parsing: "s3://nimbus-assets/prod?endpoint=http://10.0.0.5:9000&region=us-east-1&style=path")
/// ```
///
/// A location only names the place, as ``StorageLocation`` names an engine: module
/// `NimbusEngines` opens it (`AssetLocation.open(for:storage:)`).
public enum AssetLocation: Sendable, Equatable, CustomStringConvertible {
    /// The engine's own place: `DIR/assets` in SQLite mode, chunks in PostgreSQL itself in
    /// PostgreSQL mode.
    case engineDefault
    /// Files under a directory (every node mounts the same one).
    case directory(String)
    /// Objects in an S3-compatible bucket.
    case objectStore(ObjectStoreLocation)

    /// Parses `file:///absolute/dir`, `s3://bucket/prefix?…` (see ``ObjectStoreLocation``), or
    /// `default` (the engine's own place).
    public init(parsing text: String) throws(AssetLocationError) {
        if text == "default" {
            self = .engineDefault
        } else if text.hasPrefix("file://") {
            guard let url = URL(string: text), url.host == nil || url.host == "" || url.host == "localhost",
                url.path.hasPrefix("/"), url.query == nil
            else { throw AssetLocationError("'\(text)' is not a file URL of an absolute directory (file:///shared/dir)") }
            self = .directory(url.path)
        } else if text.hasPrefix("s3://") {
            self = .objectStore(try ObjectStoreLocation(parsing: text))
        } else {
            throw AssetLocationError(
                "'\(text)' names no asset location: use file:///shared/dir, s3://bucket/prefix?endpoint=…&region=…, or default")
        }
    }

    /// What a banner or log line shows (never a credential: none is in a location).
    public var description: String {
        switch self {
        case .engineDefault: return "the engine's default"
        case .directory(let path): return "file://" + path
        case .objectStore(let location): return location.description
        }
    }
}

/// An S3-compatible bucket and the key prefix Nimbus's objects live under, and how to reach it.
///
/// Parsed from `s3://BUCKET[/PREFIX][?endpoint=URL&region=REGION&style=path|virtual]`:
/// - `endpoint`: the store's base URL (`http://127.0.0.1:9000` for MinIO, an R2 account URL…);
///   default `https://s3.REGION.amazonaws.com`.
/// - `region`: the SigV4 signing region; default `us-east-1`.
/// - `style`: `path` (`ENDPOINT/BUCKET/KEY`) or `virtual` (`BUCKET.ENDPOINT-HOST/KEY`); default
///   `virtual` for AWS, `path` when an endpoint is given (what self-hosted stores answer).
///
/// Credentials are never part of it: the store reads them from the environment as the AWS
/// tools do (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`).
public struct ObjectStoreLocation: Sendable, Equatable, CustomStringConvertible {
    /// How object URLs name the bucket.
    public enum Style: String, Sendable, Equatable {
        /// `ENDPOINT/BUCKET/KEY`.
        case path
        /// `SCHEME://BUCKET.HOST/KEY`.
        case virtual
    }

    public var bucket: String
    /// The key prefix, without leading or trailing `/` (empty: the bucket's root).
    public var prefix: String
    /// `scheme://host[:port]`, no path.
    public var endpoint: String
    public var region: String
    public var style: Style

    public init(bucket: String, prefix: String = "", endpoint: String? = nil, region: String = "us-east-1", style: Style? = nil) {
        self.bucket = bucket
        self.prefix = prefix.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        self.endpoint = endpoint ?? "https://s3.\(region).amazonaws.com"
        self.region = region
        self.style = style ?? (endpoint == nil ? .virtual : .path)
    }

    /// Parses `s3://bucket/prefix?endpoint=…&region=…&style=…`.
    public init(parsing text: String) throws(AssetLocationError) {
        guard let components = URLComponents(string: text), components.scheme == "s3",
            let bucket = components.host, !bucket.isEmpty
        else { throw AssetLocationError("'\(text)' is not s3://bucket/prefix?endpoint=…&region=…") }
        guard bucket.count >= 3, bucket.count <= 63,
            bucket.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-" || $0 == ".") })
        else { throw AssetLocationError("'\(bucket)' is not a bucket name (3 to 63 of a-z, 0-9, '-' and '.')") }
        var endpoint: String?
        var region = "us-east-1"
        var style: Style?
        for item in components.queryItems ?? [] {
            let value = item.value ?? ""
            switch item.name {
            case "endpoint":
                guard let url = URLComponents(string: value), ["http", "https"].contains(url.scheme ?? ""),
                    let host = url.host, !host.isEmpty, url.path.isEmpty || url.path == "/", url.query == nil,
                    url.user == nil
                else { throw AssetLocationError("endpoint '\(value)' must be http(s)://host[:port] with no path") }
                endpoint = "\(url.scheme!)://\(host)" + (url.port.map { ":\($0)" } ?? "")
            case "region":
                guard !value.isEmpty, value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
                    throw AssetLocationError("region '\(value)' must be letters, digits and '-'")
                }
                region = value
            case "style":
                guard let parsed = Style(rawValue: value) else {
                    throw AssetLocationError("style '\(value)' must be path or virtual")
                }
                style = parsed
            default:
                throw AssetLocationError("unknown parameter '\(item.name)' (endpoint, region and style are known)")
            }
        }
        let prefix = components.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        guard prefix.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_./".contains($0)) }),
            !prefix.split(separator: "/").contains(where: { $0 == "." || $0 == ".." })
        else { throw AssetLocationError("prefix '\(prefix)' must be letters, digits, '-', '_', '.' and '/'") }
        self.init(bucket: bucket, prefix: prefix, endpoint: endpoint, region: region, style: style)
    }

    public var description: String {
        "s3://\(bucket)" + (prefix.isEmpty ? "" : "/\(prefix)") + "?endpoint=\(endpoint)&region=\(region)&style=\(style.rawValue)"
    }
}

/// A `--assets` value that names no location, and why.
public struct AssetLocationError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
