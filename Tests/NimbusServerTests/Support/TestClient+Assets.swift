import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NimbusProtocol

/// What a test reads back from an asset URL: status, headers and the raw bytes.
struct RawReply: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var bytes: [UInt8]
    var json: JSON { (try? JSON.parse(bytes)) ?? .null }
    var serverErrorCode: String? { json["serverErrorCode"]?.string }
}

extension TestClient {
    /// `assets/upload` for one field; returns the reply and the upload URL it handed out.
    func requestUpload(
        zone: String = "_defaultZone", record: String, field: String, recordType: String = "Photo", scope: String = "private"
    ) async throws -> (reply: Reply, url: String?) {
        let reply = try await post(
            "assets/upload",
            [
                "zoneID": ["zoneName": .string(zone)],
                "tokens": [["recordName": .string(record), "recordType": .string(recordType), "fieldName": .string(field)]],
            ], scope: scope)
        return (reply, reply["tokens"]?.array?.first?["url"]?.string)
    }

    /// Sends raw bytes to an asset URL (no credentials: the URL is the capability).
    func transfer(_ url: String, method: HTTPMethod = .POST, bytes: [UInt8]? = nil, headers: [(String, String)] = [])
        async throws -> RawReply
    {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let bytes { request.body = .bytes(ByteBuffer(bytes: bytes)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(300))
        let buffer = try await response.body.collect(upTo: 256 << 20)
        return RawReply(status: Int(response.status.code), headers: response.headers, bytes: Array(buffer.readableBytesView))
    }

    /// Uploads `bytes` for a field (tokens, then the POST) and returns the `singleFile` dictionary.
    func uploadAsset(
        _ bytes: [UInt8], zone: String = "_defaultZone", record: String, field: String, scope: String = "private"
    ) async throws -> JSON {
        let (reply, url) = try await requestUpload(zone: zone, record: record, field: field, scope: scope)
        guard let url else { throw TestFailure("assets/upload answered no url: \(reply.text)") }
        let posted = try await transfer(url, bytes: bytes)
        guard posted.status == 200, let singleFile = posted.json["singleFile"] else {
            throw TestFailure("the upload answered \(posted.status): \(String(decoding: posted.bytes, as: UTF8.self))")
        }
        return singleFile
    }

    /// `records/lookup` of one record.
    func lookup(_ name: String, zone: String = "_defaultZone", scope: String = "private") async throws -> Reply {
        try await post(
            "records/lookup", ["zoneID": ["zoneName": .string(zone)], "records": [["recordName": .string(name)]]],
            scope: scope)
    }
}

/// A record save with typed fields (``typedOp(_:_:_:_:)`` with the record type last).
func assetOp(_ type: String, _ name: String, _ fields: [String: (JSON, String)], recordType: String = "Photo") -> JSON {
    typedOp(type, name, recordType, fields)
}

/// A failure a helper reports.
struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Deterministic test bytes.
func testBytes(_ count: Int, seed: UInt8 = 1) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &* 7 &+ ($0 >> 8)) }
}

/// `fileChecksum` of bytes: base64 of their SHA-256.
func checksum(_ bytes: [UInt8]) -> String {
    Data(SHA256.hash(data: bytes)).base64EncodedString()
}
