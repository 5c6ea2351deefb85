import AsyncHTTPClient
import Foundation
import NimbusProtocol
import NimbusStore
import Testing

@testable import NimbusObjectStore

/// `--assets` values, and the URLs each addressing style builds from them.
@Suite("Object store locations")
struct ObjectStoreLocationTests {
    static let credentials = AWSCredentials(accessKeyID: "AKID", secretAccessKey: "secret")

    @Test func locationsParseWithTheirDefaults() throws {
        #expect(try AssetLocation(parsing: "file:///mnt/shared/nimbus") == .directory("/mnt/shared/nimbus"))
        #expect(try AssetLocation(parsing: "default") == .engineDefault)
        let aws = try ObjectStoreLocation(parsing: "s3://my-bucket/nimbus/prod/")
        #expect(aws == ObjectStoreLocation(bucket: "my-bucket", prefix: "nimbus/prod", endpoint: "https://s3.us-east-1.amazonaws.com", region: "us-east-1", style: .virtual))
        let minio = try ObjectStoreLocation(parsing: "s3://assets?endpoint=http://10.0.0.5:9000/&region=eu-west-1")
        #expect(minio.endpoint == "http://10.0.0.5:9000")
        #expect(minio.region == "eu-west-1")
        #expect(minio.style == .path, "an endpoint of one's own answers path-style by default")
        #expect(try ObjectStoreLocation(parsing: minio.description) == minio, "a location's description parses back")
        #expect(try ObjectStoreLocation(parsing: "s3://r2-assets?endpoint=https://acct.r2.cloudflarestorage.com&region=auto&style=virtual").style == .virtual)
    }

    @Test(arguments: [
        "s3://", "s3://AB", "s3://bucket?endpoint=ftp://x", "s3://bucket?endpoint=http://h/path", "s3://bucket?style=sideways",
        "s3://bucket?colour=blue", "s3://bucket/../up", "file://relative", "file:///dir?x=1", "http://bucket", "",
    ])
    func badLocationsAreRefusedWithAReason(text: String) {
        #expect(throws: AssetLocationError.self) { try AssetLocation(parsing: text) }
    }

    @Test func pathAndVirtualHostedURLs() throws {
        let path = try S3Client(
            location: ObjectStoreLocation(bucket: "assets", prefix: "p", endpoint: "http://127.0.0.1:9000", style: .path),
            credentials: Self.credentials, http: .shared, clock: .fixed(millis: 1_369_353_600_000))
        #expect(path.host == "127.0.0.1:9000")
        #expect(path.url(path: path.path("p/blobs/ab cd"), query: []) == "http://127.0.0.1:9000/assets/p/blobs/ab%20cd")
        let virtual = try S3Client(
            location: ObjectStoreLocation(bucket: "examplebucket", region: "us-east-1"), credentials: Self.credentials,
            http: .shared, clock: .fixed(millis: 1_369_353_600_000))
        #expect(virtual.host == "examplebucket.s3.us-east-1.amazonaws.com")
        #expect(virtual.path("test.txt") == "/test.txt")
        let signed = virtual.presignedGET("test.txt", seconds: 86400)
        #expect(signed.hasPrefix("https://examplebucket.s3.us-east-1.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&"))
        #expect(signed.contains("X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature="))
        #expect(virtual.presignedGET("x", seconds: 10_000_000).contains("X-Amz-Expires=604800"), "at most 7 days, S3's limit")
    }

    @Test func listingsAndTimestampsParse() {
        let xml = """
            <ListBucketResult><IsTruncated>true</IsTruncated><Contents><Key>a&amp;b</Key><LastModified>2013-05-24T00:00:00.000Z</LastModified>\
            <Size>12</Size></Contents><NextContinuationToken>t1</NextContinuationToken></ListBucketResult>
            """
        #expect(S3XML.values("Key", in: xml) == ["a&b"])
        #expect(S3XML.values("NextContinuationToken", in: xml) == ["t1"])
        #expect(S3Time.iso8601Millis("2013-05-24T00:00:00.000Z") == 1_369_353_601_000, "rounded up to the next second")
        #expect(S3Time.httpDateMillis("Fri, 24 May 2013 00:00:00 GMT") == 1_369_353_601_000)
        #expect(S3Time.httpDateMillis("yesterday") == nil)
    }

    /// Hostile or broken answers from the object store are refused, never a trap: years far
    /// out of range, and random bytes as timestamps and XML (seeded).
    @Test func hostileTimestampsAndXMLNeverTrap() {
        #expect(S3Time.iso8601Millis("999999999999999-05-24T00:00:00.000Z") == nil)
        #expect(S3Time.httpDateMillis("Fri, 24 May 999999999999999 00:00:00 GMT") == nil)
        var generator = SplitMix64(seed: 40)
        let alphabet = Array("0123456789-:TZ .,<>/&;amp#SizeKey GMT May\u{0}é")
        for _ in 0..<5_000 {
            let text = String((0..<Int.random(in: 0..<48, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            _ = S3Time.iso8601Millis(text)
            _ = S3Time.httpDateMillis(text)
            _ = S3XML.values("Key", in: text)
            _ = S3XML.unescape(text)
        }
    }
}

