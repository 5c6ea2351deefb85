import Foundation
import NimbusStore
import Testing

/// The S3-compatible server the object-store cases use, as ``Engine`` has PostgreSQL's.
///
/// `NIMBUS_TEST_S3_URL` is an asset location, `s3://BUCKET?endpoint=http://127.0.0.1:PORT&…`,
/// of a bucket that exists, with credentials in `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`
/// (`scripts/throwaway-s3.sh` starts moto's server and sets all three, as `.ci/run` does; CI
/// also sets `NIMBUS_REQUIRE_S3=1`, so a missing one fails instead of skipping). Each test
/// gets a prefix of its own in the bucket.
///
/// With `NIMBUS_TEST_ASSETS=s3`, every server a ``ServerHarness`` starts keeps its asset
/// bytes there: `.ci/run` runs the asset suites a second time that way, on both engines.
public enum TestObjectStore {
    /// The bucket the object-store cases use, if configured.
    public static let location: ObjectStoreLocation? = ProcessInfo.processInfo.environment["NIMBUS_TEST_S3_URL"].flatMap {
        $0.isEmpty ? nil : try? ObjectStoreLocation(parsing: $0)
    }

    /// Set by CI (`NIMBUS_REQUIRE_S3=1`): a missing S3 server is a failure there, never a skip.
    public static let required = ProcessInfo.processInfo.environment["NIMBUS_REQUIRE_S3"] == "1"

    /// Whether every harness's server keeps asset bytes in the bucket (`NIMBUS_TEST_ASSETS=s3`).
    public static let assetsEverywhere = ProcessInfo.processInfo.environment["NIMBUS_TEST_ASSETS"] == "s3"

    /// Whether the object-store cases run: configured, or required (then they fail without it).
    public static var enabled: Bool { location != nil || required }

    /// What the skipped object-store cases say.
    public static let howTo: Comment = """
        S3 cases skipped: source scripts/throwaway-s3.sh and call start_throwaway_s3 (as .ci/run does), or set \
        NIMBUS_TEST_S3_URL=s3://BUCKET?endpoint=http://127.0.0.1:PORT&style=path and AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY
        """

    /// A prefix of its own in the test bucket for the test named `id`.
    /// - Throws: when no S3 server is configured (only reached when ``required``).
    public static func fresh(_ id: String = UUID().uuidString.lowercased()) throws -> ObjectStoreLocation {
        guard var location else { throw MissingObjectStore() }
        location.prefix = (location.prefix.isEmpty ? "" : location.prefix + "/") + "test-\(id.prefix(16))"
        return location
    }
}

/// `NIMBUS_REQUIRE_S3=1` without `NIMBUS_TEST_S3_URL`.
struct MissingObjectStore: Error, CustomStringConvertible {
    var description: String { "NIMBUS_REQUIRE_S3=1 but NIMBUS_TEST_S3_URL names no S3 server (see scripts/throwaway-s3.sh)" }
}
