import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NimbusStore

/// Signed requests to one S3-compatible bucket: object URLs in the location's style, SigV4
/// on each, errors as ``ObjectStoreError``. Object keys are the caller's own (built from
/// content hashes and ids the server made), never anything a client sent.
struct S3Client: Sendable {
    let location: ObjectStoreLocation
    let signer: SigV4Signer
    let http: HTTPClient
    let clock: WallClock
    /// `scheme`, `host[:port]` of requests (the bucket's host in virtual style).
    let scheme: String
    let host: String

    init(location: ObjectStoreLocation, credentials: AWSCredentials, http: HTTPClient, clock: WallClock) throws {
        guard let endpoint = URLComponents(string: location.endpoint), let scheme = endpoint.scheme,
            let endpointHost = endpoint.host
        else { throw ObjectStoreError("endpoint '\(location.endpoint)' is not a URL") }
        self.location = location
        self.signer = SigV4Signer(credentials: credentials, region: location.region, service: "s3")
        self.http = http
        self.clock = clock
        self.scheme = scheme
        let port = endpoint.port.map { ":\($0)" } ?? ""
        self.host = (location.style == .virtual ? "\(location.bucket)." : "") + endpointHost + port
    }

    /// The encoded path of object `key` (or of the bucket, for an empty key: `/BUCKET` without
    /// a trailing `/` in path style, as the AWS tools send it; some stores sign it that way).
    func path(_ key: String) -> String {
        let encoded = SigV4Signer.uriEncode(key, keepSlash: true)
        switch location.style {
        case .path: return key.isEmpty ? "/\(location.bucket)" : "/\(location.bucket)/\(encoded)"
        case .virtual: return "/\(encoded)"
        }
    }

    func url(path: String, query: [(String, String)]) -> String {
        let text = query.map { "\(SigV4Signer.uriEncode($0.0))=\(SigV4Signer.uriEncode($0.1))" }.joined(separator: "&")
        return "\(scheme)://\(host)\(path)" + (text.isEmpty ? "" : "?\(text)")
    }

    /// A pre-signed `GET` of object `key`, valid `seconds` (1 s to 7 days) from now.
    func presignedGET(_ key: String, seconds: Int) -> String {
        let path = path(key)
        let query = signer.presignedQuery(
            method: "GET", path: path, query: [], host: host, expires: min(max(seconds, 1), 604_800), date: clock.now())
        return url(path: path, query: query)
    }

    /// How many times a request is sent before its failure is reported.
    static let attempts = 3
    /// Answers that mean "try again" (S3's InternalError, SlowDown and their gateways').
    static let retriedStatuses: Set<Int> = [500, 502, 503, 504]

    /// Sends a signed request; answers a 2xx (or one of `accepting`), throws for the rest.
    /// `body` is hashed for the signature.
    func send(
        _ method: HTTPMethod, _ key: String, query: [(String, String)] = [], headers extra: [(String, String)] = [],
        body: ByteBuffer? = nil, accepting: Set<Int> = [], timeout: TimeAmount = .seconds(300)
    ) async throws -> HTTPClientResponse {
        let path = path(key)
        let payloadHash: String =
            body.map { buffer in buffer.withUnsafeReadableBytes { SHA256.hash(data: $0).hexString } }
            ?? SigV4Signer.emptyPayloadHash
        let date = clock.now()
        var headers: [(String, String)] = [
            ("host", host), ("x-amz-date", SigV4Signer.amzDate(date)), ("x-amz-content-sha256", payloadHash),
        ]
        if let token = signer.credentials.sessionToken { headers.append(("x-amz-security-token", token)) }
        headers += extra
        let authorization = signer.authorization(
            method: method.rawValue, path: path, query: query, headers: headers, payloadHash: payloadHash, date: date)
        var request = HTTPClientRequest(url: url(path: path, query: query))
        request.method = method
        for (name, value) in headers { request.headers.replaceOrAdd(name: name, value: value) }
        request.headers.replaceOrAdd(name: "authorization", value: authorization)
        // AsyncHTTPClient sets Content-Length from the body (0 for a PUT or POST without one).
        if let body {
            request.body = .bytes(body)
        } else if method == .PUT || method == .POST {
            request.body = .bytes(ByteBuffer())
        }
        // A connection the pool kept may have been closed by the store meanwhile (moto's and
        // many stores' idle timeouts), and a busy store may answer 500/503: every request here
        // carries its whole body, so it is sent again, twice at most, as AWS's own SDKs do.
        var response: HTTPClientResponse?
        for attempt in 1...Self.attempts {
            do {
                let answer = try await http.execute(request, timeout: timeout)
                if Self.retriedStatuses.contains(Int(answer.status.code)), attempt < Self.attempts {
                    _ = try? await answer.body.collect(upTo: 64 * 1024)
                    try await Task.sleep(for: .milliseconds(50 * attempt))
                    continue
                }
                response = answer
                break
            } catch {
                guard attempt < Self.attempts else {
                    throw ObjectStoreError("the object store at \(location.endpoint) could not be reached: \(error)")
                }
                try await Task.sleep(for: .milliseconds(50 * attempt))
            }
        }
        guard let response else { throw ObjectStoreError("the object store at \(location.endpoint) did not answer") }
        let status = Int(response.status.code)
        if (200..<300).contains(status) || accepting.contains(status) { return response }
        let text = (try? await response.body.collect(upTo: 64 * 1024)).map { String(buffer: $0) } ?? ""
        let code = S3XML.values("Code", in: text).first ?? "HTTP \(status)"
        let message = S3XML.values("Message", in: text).first.map { ": \($0)" } ?? ""
        throw ObjectStoreError("the object store refused \(method.rawValue) \(key.isEmpty ? "/" : key): \(code)\(message)", status: status)
    }

    /// Sends a request and reads its (small) answer whole, so that the connection is kept for
    /// the next request: the status, headers and body as text.
    @discardableResult
    func call(
        _ method: HTTPMethod, _ key: String, query: [(String, String)] = [], headers: [(String, String)] = [],
        body: ByteBuffer? = nil, accepting: Set<Int> = []
    ) async throws -> (status: Int, headers: HTTPHeaders, text: String) {
        let response = try await send(method, key, query: query, headers: headers, body: body, accepting: accepting)
        let text = String(buffer: try await response.body.collect(upTo: 16 << 20))
        return (Int(response.status.code), response.headers, text)
    }

    /// Sends a request and answers its (small) body as text.
    func text(
        _ method: HTTPMethod, _ key: String, query: [(String, String)] = [], headers: [(String, String)] = [],
        body: ByteBuffer? = nil
    ) async throws -> String {
        try await call(method, key, query: query, headers: headers, body: body).text
    }

    /// Every object under `prefix`: key, size, and last modification (milliseconds, rounded up
    /// to the next second: listings keep seconds).
    func list(prefix: String) async throws -> [S3Object] {
        var objects: [S3Object] = []
        var token: String?
        repeat {
            var query = [("list-type", "2"), ("prefix", prefix)]
            if let token { query.append(("continuation-token", token)) }
            let text = try await text(.GET, "", query: query)
            for entry in S3XML.elements("Contents", in: text) {
                guard let key = S3XML.values("Key", in: entry).first,
                    let size = S3XML.values("Size", in: entry).first.flatMap({ Int64($0) })
                else { continue }
                let modified = S3XML.values("LastModified", in: entry).first.flatMap(S3Time.iso8601Millis) ?? Int64.max
                objects.append(S3Object(key: key, size: size, modified: modified))
            }
            token = S3XML.values("IsTruncated", in: text).first == "true" ? S3XML.values("NextContinuationToken", in: text).first : nil
        } while token != nil
        return objects
    }
}

/// One object of a listing.
struct S3Object: Sendable, Equatable {
    var key: String
    var size: Int64
    /// Milliseconds since the epoch, rounded up to the next second.
    var modified: Int64
}

/// The few XML answers S3 gives, read by element name (no namespaces, no nesting of the same
/// name): enough for listings, multipart uploads and errors.
enum S3XML {
    /// The text of each `<name>…</name>` in `xml`, entities decoded.
    static func values(_ name: String, in xml: String) -> [String] {
        elements(name, in: xml).map(unescape)
    }

    /// The raw inner XML of each `<name>…</name>`.
    static func elements(_ name: String, in xml: String) -> [String] {
        var found: [String] = []
        var rest = xml[...]
        let open = "<\(name)>", close = "</\(name)>"
        while let start = rest.range(of: open), let end = rest[start.upperBound...].range(of: close) {
            found.append(String(rest[start.upperBound..<end.lowerBound]))
            rest = rest[end.upperBound...]
        }
        return found
    }

    static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&#34;", with: "\"").replacingOccurrences(of: "&amp;", with: "&")
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

/// The two timestamp forms S3 answers, to milliseconds rounded up to the next whole second
/// (both forms keep seconds only, and "written before" must never be believed too early).
enum S3Time {
    /// `2026-11-27T23:00:00.000Z` (listings).
    static func iso8601Millis(_ text: String) -> Int64? {
        let digits = text.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        guard digits.count >= 6 else { return nil }
        return seconds(digits[0], digits[1], digits[2], digits[3], digits[4], digits[5]).map { ($0 + 1) * 1000 }
    }

    /// `Fri, 27 Nov 2026 23:00:00 GMT` (`Last-Modified`).
    static func httpDateMillis(_ text: String) -> Int64? {
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let parts = text.split(whereSeparator: { $0 == " " || $0 == ":" || $0 == "," })
        guard parts.count >= 7, let month = months.firstIndex(of: String(parts[2])), let day = Int(parts[1]),
            let year = Int(parts[3]), let hour = Int(parts[4]), let minute = Int(parts[5]), let second = Int(parts[6])
        else { return nil }
        return seconds(year, month + 1, day, hour, minute, second).map { ($0 + 1) * 1000 }
    }

    private static func seconds(_ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int, _ second: Int) -> Int64? {
        let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        // A year far out of range (a hostile answer) is refused, never converted with a trap.
        guard let date = Calendar.utc.date(from: components), abs(date.timeIntervalSince1970) < 1e12 else { return nil }
        return Int64(date.timeIntervalSince1970)
    }
}
