import Crypto
import Foundation

/// AWS Signature Version 4 (`AWS4-HMAC-SHA256`), composed from swift-crypto's HMAC and
/// SHA-256: the `Authorization` header of a request, or the query of a pre-signed URL.
///
/// ```swift
/// let signer = SigV4Signer(credentials: credentials, region: "us-east-1", service: "s3")
/// let authorization = signer.authorization(
///     method: "GET", path: "/bucket/key", query: [], headers: headers, payloadHash: SigV4Signer.emptyPayloadHash,
///     date: Date())
/// ```
///
/// The caller passes the path already URI-encoded as it goes on the wire (S3 signs it as it
/// is, without the second encoding other services use), the query unencoded, and every
/// header to sign (`host` and `x-amz-date` among them). Tested against AWS's published
/// examples (`SigV4SignerTests`).
public struct SigV4Signer: Sendable {
    public var credentials: AWSCredentials
    public var region: String
    public var service: String

    /// The SHA-256 of no bytes: the payload hash of a request without a body.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    /// What a pre-signed URL, or a request whose body is not hashed, signs as its payload.
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"

    public init(credentials: AWSCredentials, region: String, service: String) {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// The `Authorization` header's value for a request with these parts.
    public func authorization(
        method: String, path: String, query: [(String, String)], headers: [(String, String)], payloadHash: String, date: Date
    ) -> String {
        let (signedNames, signature) = sign(
            method: method, path: path, query: query, headers: headers, payloadHash: payloadHash, date: date)
        return "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope(date)),SignedHeaders=\(signedNames),Signature=\(signature)"
    }

    /// The query of a pre-signed URL (`X-Amz-…` items, signature last) that lets whoever holds
    /// it make this request without credentials for `expires` seconds from `date`; only the
    /// `host` header is signed, the payload is not.
    public func presignedQuery(
        method: String, path: String, query: [(String, String)], host: String, expires: Int, date: Date
    ) -> [(String, String)] {
        var items = query
        items.append(("X-Amz-Algorithm", "AWS4-HMAC-SHA256"))
        items.append(("X-Amz-Credential", "\(credentials.accessKeyID)/\(scope(date))"))
        items.append(("X-Amz-Date", Self.amzDate(date)))
        items.append(("X-Amz-Expires", String(expires)))
        if let token = credentials.sessionToken { items.append(("X-Amz-Security-Token", token)) }
        items.append(("X-Amz-SignedHeaders", "host"))
        let (_, signature) = sign(
            method: method, path: path, query: items, headers: [("host", host)], payloadHash: Self.unsignedPayload, date: date)
        items.append(("X-Amz-Signature", signature))
        return items
    }

    /// The canonical request: what the signature covers, one part a line.
    func canonicalRequest(
        method: String, path: String, query: [(String, String)], headers: [(String, String)], payloadHash: String
    ) -> (request: String, signedNames: String) {
        var byName: [String: [String]] = [:]
        for (name, value) in headers {
            byName[name.lowercased(), default: []].append(Self.trimmed(value))
        }
        let names = byName.keys.sorted()
        let canonicalHeaders = names.map { "\($0):\(byName[$0]!.joined(separator: ","))\n" }.joined()
        let signedNames = names.joined(separator: ";")
        let request = [
            method, path.isEmpty ? "/" : path, Self.canonicalQuery(query), canonicalHeaders, signedNames, payloadHash,
        ].joined(separator: "\n")
        return (request, signedNames)
    }

    /// The string the signing key signs.
    func stringToSign(canonicalRequest: String, date: Date) -> String {
        let hash = SHA256.hash(data: Array(canonicalRequest.utf8)).hexString
        return ["AWS4-HMAC-SHA256", Self.amzDate(date), scope(date), hash].joined(separator: "\n")
    }

    private func sign(
        method: String, path: String, query: [(String, String)], headers: [(String, String)], payloadHash: String, date: Date
    ) -> (signedNames: String, signature: String) {
        let (request, signedNames) = canonicalRequest(
            method: method, path: path, query: query, headers: headers, payloadHash: payloadHash)
        let text = stringToSign(canonicalRequest: request, date: date)
        var key = SymmetricKey(data: Array(("AWS4" + credentials.secretAccessKey).utf8))
        for part in [Self.day(date), region, service, "aws4_request"] {
            key = SymmetricKey(data: Array(HMAC<SHA256>.authenticationCode(for: Array(part.utf8), using: key)))
        }
        let signature = Array(HMAC<SHA256>.authenticationCode(for: Array(text.utf8), using: key)).hexString
        return (signedNames, signature)
    }

    private func scope(_ date: Date) -> String { "\(Self.day(date))/\(region)/\(service)/aws4_request" }

    /// `key=value` pairs, each URI-encoded, sorted, joined by `&`.
    static func canonicalQuery(_ query: [(String, String)]) -> String {
        let encoded: [(name: String, value: String)] = query.map { (uriEncode($0.0), uriEncode($0.1)) }
        let sorted = encoded.sorted { left, right in
            left.name == right.name ? left.value < right.value : left.name < right.name
        }
        return sorted.map { $0.name + "=" + $0.value }.joined(separator: "&")
    }

    /// A header value with its ends trimmed and inner runs of spaces made one.
    static func trimmed(_ value: String) -> String {
        value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            .trimmingCharacters(in: .whitespaces)
    }

    /// SigV4's URI encoding: every byte but `A-Z a-z 0-9 - . _ ~` as `%XX` (upper case); `/`
    /// too unless `keepSlash` (an object key in a path).
    public static func uriEncode(_ text: String, keepSlash: Bool = false) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where keepSlash:
                out.append("/")
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    /// `yyyyMMdd'T'HHmmss'Z'` in UTC.
    public static func amzDate(_ date: Date) -> String {
        let parts = Calendar.utc.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(
            format: "%04d%02d%02dT%02d%02d%02dZ", parts.year!, parts.month!, parts.day!, parts.hour!, parts.minute!, parts.second!)
    }

    static func day(_ date: Date) -> String { String(amzDate(date).prefix(8)) }
}

extension Calendar {
    /// The Gregorian calendar in UTC.
    static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()
}

extension Sequence where Element == UInt8 {
    /// Lowercase hex.
    var hexString: String { map { String(format: "%02x", $0) }.joined() }
}

/// An access key pair (and session token) as the AWS tools read it from the environment.
public struct AWSCredentials: Sendable, Equatable {
    public var accessKeyID: String
    public var secretAccessKey: String
    /// Temporary credentials' token (`AWS_SESSION_TOKEN`), sent as `x-amz-security-token`.
    public var sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and (optional) `AWS_SESSION_TOKEN`.
    /// - Throws: ``ObjectStoreError`` naming what is missing.
    public static func fromEnvironment(_ environment: [String: String]) throws -> AWSCredentials {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        guard let id = value("AWS_ACCESS_KEY_ID"), let secret = value("AWS_SECRET_ACCESS_KEY") else {
            throw ObjectStoreError(
                "an s3:// asset location needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment "
                    + "(and AWS_SESSION_TOKEN for temporary credentials)")
        }
        return AWSCredentials(accessKeyID: id, secretAccessKey: secret, sessionToken: value("AWS_SESSION_TOKEN"))
    }
}

/// An object store refused a request or could not be reached; `message` says which and why.
public struct ObjectStoreError: Error, Sendable, CustomStringConvertible {
    public let message: String
    /// The HTTP status the store answered, if it answered.
    public var status: Int?

    public init(_ message: String, status: Int? = nil) {
        self.message = message
        self.status = status
    }

    public var description: String { message }
}
