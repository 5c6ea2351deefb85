import Foundation
import Testing

@testable import NimbusObjectStore

/// The signer against AWS's published SigV4 examples: the S3 API reference's "Signature
/// calculations for the Authorization header" and "query parameters" examples (bucket
/// `examplebucket`, 2013-05-24), and the generic SigV4 test suite (`get-vanilla`,
/// `get-vanilla-query-order-key-case`, 2015-08-30). A wrong byte anywhere in canonicalisation
/// changes the signature.
@Suite("SigV4 signer")
struct SigV4SignerTests {
    static let s3 = SigV4Signer(
        credentials: AWSCredentials(
            accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        region: "us-east-1", service: "s3")
    static let suite = SigV4Signer(
        credentials: AWSCredentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
        region: "us-east-1", service: "service")
    /// 2013-05-24T00:00:00Z.
    static let s3Date = Date(timeIntervalSince1970: 1_369_353_600)
    /// 2015-08-30T12:36:00Z.
    static let suiteDate = Date(timeIntervalSince1970: 1_440_938_160)
    static let host = "examplebucket.s3.amazonaws.com"

    static func s3Headers(_ extra: [(String, String)] = [], payload: String = SigV4Signer.emptyPayloadHash) -> [(String, String)] {
        [("Host", host), ("x-amz-date", "20130524T000000Z"), ("x-amz-content-sha256", payload)] + extra
    }

    @Test func getObjectWithARange() {
        let headers = Self.s3Headers([("Range", "bytes=0-9")])
        let (canonical, signed) = Self.s3.canonicalRequest(
            method: "GET", path: "/test.txt", query: [], headers: headers, payloadHash: SigV4Signer.emptyPayloadHash)
        #expect(signed == "host;range;x-amz-content-sha256;x-amz-date")
        #expect(
            Self.s3.stringToSign(canonicalRequest: canonical, date: Self.s3Date)
                == "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
                + "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972")
        #expect(
            Self.s3.authorization(
                method: "GET", path: "/test.txt", query: [], headers: headers, payloadHash: SigV4Signer.emptyPayloadHash,
                date: Self.s3Date)
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    @Test func putObjectWithAnEncodedKeyAndABody() {
        let payload = "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
        let headers = Self.s3Headers(
            [("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-storage-class", "REDUCED_REDUNDANCY")], payload: payload)
        let path = "/" + SigV4Signer.uriEncode("test$file.text", keepSlash: true)
        #expect(path == "/test%24file.text")
        let authorization = Self.s3.authorization(
            method: "PUT", path: path, query: [], headers: headers, payloadHash: payload, date: Self.s3Date)
        #expect(authorization.hasSuffix(
            "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"
                + "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"))
    }

    @Test func subresourceAndSortedQueries() {
        let lifecycle = Self.s3.authorization(
            method: "GET", path: "/", query: [("lifecycle", "")], headers: Self.s3Headers(),
            payloadHash: SigV4Signer.emptyPayloadHash, date: Self.s3Date)
        #expect(lifecycle.hasSuffix("Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"))
        let list = Self.s3.authorization(
            method: "GET", path: "/", query: [("prefix", "J"), ("max-keys", "2")], headers: Self.s3Headers(),
            payloadHash: SigV4Signer.emptyPayloadHash, date: Self.s3Date)
        #expect(list.hasSuffix("Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"))
    }

    @Test func presignedURL() {
        let query = Self.s3.presignedQuery(
            method: "GET", path: "/test.txt", query: [], host: Self.host, expires: 86400, date: Self.s3Date)
        #expect(query.map(\.0) == [
            "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature",
        ])
        #expect(query.last?.1 == "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
        #expect(SigV4Signer.canonicalQuery(Array(query.dropLast())).contains(
            "X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"))
    }

    @Test func genericSuiteVanillaRequests() {
        let headers = [("Host", "example.amazonaws.com"), ("X-Amz-Date", "20150830T123600Z")]
        let vanilla = Self.suite.authorization(
            method: "GET", path: "/", query: [], headers: headers, payloadHash: SigV4Signer.emptyPayloadHash,
            date: Self.suiteDate)
        #expect(
            vanilla
                == "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request,"
                + "SignedHeaders=host;x-amz-date,Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")
        let ordered = Self.suite.authorization(
            method: "GET", path: "/", query: [("Param2", "value2"), ("Param1", "value1")], headers: headers,
            payloadHash: SigV4Signer.emptyPayloadHash, date: Self.suiteDate)
        #expect(ordered.hasSuffix("Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"))
    }

    @Test func headerValuesAreTrimmedAndEncodingKeepsOnlyUnreservedBytes() {
        #expect(SigV4Signer.trimmed("  a   b  c ") == "a b c")
        #expect(SigV4Signer.uriEncode("a b/c~d_e.f-g+h=é") == "a%20b%2Fc~d_e.f-g%2Bh%3D%C3%A9")
        #expect(SigV4Signer.uriEncode("dir/file name", keepSlash: true) == "dir/file%20name")
        #expect(SigV4Signer.amzDate(Self.suiteDate) == "20150830T123600Z")
    }

    @Test func credentialsComeFromTheEnvironmentAsTheAWSToolsReadThem() throws {
        let credentials = try AWSCredentials.fromEnvironment([
            "AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "token",
        ])
        #expect(credentials == AWSCredentials(accessKeyID: "id", secretAccessKey: "secret", sessionToken: "token"))
        #expect(throws: ObjectStoreError.self) { try AWSCredentials.fromEnvironment(["AWS_ACCESS_KEY_ID": "id"]) }
    }
}
