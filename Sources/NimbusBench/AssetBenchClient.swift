import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NimbusProtocol

/// The asset wire as a CloudKit Web Services client speaks it (docs/ASSETS.md): an upload
/// URL from `assets/upload`, the file's bytes streamed to it (a `POST`, or Nimbus's resumable
/// `PUT` chunks), the `singleFile` saved as an `ASSETID` field by `records/modify`, and the
/// `ASSET`'s `downloadURL` from `records/lookup` streamed into a file. Bodies stream both
/// ways: the client never holds a file in memory either.
struct AssetBenchClient: Sendable {
    let api: BenchClient
    var http: HTTPClient { api.http }
    static let recordType = "BenchFile"
    static let field = "file"
    static let timeout = TimeAmount.seconds(900)

    /// `assets/upload` for the `file` field of record `recordName`: its upload URL.
    func uploadURL(recordName: String) async throws -> String {
        let body: JSON = [
            "zoneID": ["zoneName": "_defaultZone"],
            "tokens": [["recordName": .string(recordName), "recordType": .string(Self.recordType), "fieldName": .string(Self.field)]],
        ]
        let (status, json) = try await api.post("assets/upload", body.serializedBytes())
        guard status == 200, let url = json["tokens"]?.array?.first?["url"]?.string else {
            throw BenchError("assets/upload answered \(status): \(json.serialized().prefix(300))")
        }
        return url
    }

    /// What an upload URL answered: its status and JSON.
    struct Answer: Sendable {
        var status: Int
        var json: JSON
        var singleFile: JSON? { json["singleFile"] }
        var receivedBytes: Int64? { json["receivedBytes"]?.int64 }
    }

    /// A `POST` (the whole file) or `PUT` (with `Content-Range`) of `chunks` to an upload URL.
    func send(_ chunks: FileChunks, to url: String, total: Int64, method: HTTPMethod = .POST) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        if method == .PUT {
            request.headers.add(
                name: "Content-Range", value: "bytes \(chunks.range.lowerBound)-\(chunks.range.upperBound - 1)/\(total)")
        }
        let length = chunks.range.upperBound - chunks.range.lowerBound
        request.body = .stream(chunks, length: .known(length))
        let response = try await http.execute(request, timeout: Self.timeout)
        let buffer = try await response.body.collect(upTo: 1 << 20)
        return Answer(status: Int(response.status.code), json: (try? JSON.parse(buffer.readableBytesView)) ?? .null)
    }

    /// A `POST` (or `method`) of the whole file at `path` to `url`, sent from the page cache by
    /// `sendfile` (a NIO `FileRegion`): the client neither copies the file into its memory nor
    /// queues buffers ahead of the socket, so on a machine it shares with the server it takes
    /// as little CPU and memory as a client can.
    func post(file path: String, size: Int64, to url: String, method: HTTPMethod = .POST) async throws -> Answer {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw BenchError("cannot open \(path): errno \(errno)") }
        let handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: fd)
        defer { try? handle.close() }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/octet-stream")
        let body = HTTPClient.Body.stream(contentLength: size) { writer in
            writer.write(.fileRegion(FileRegion(fileHandle: handle, readerIndex: 0, endIndex: Int(size))))
        }
        let request = try HTTPClient.Request(url: url, method: method, headers: headers, body: body)
        let response = try await http.execute(request: request, deadline: .now() + Self.timeout).get()
        let bytes = response.body.map { Array($0.readableBytesView) } ?? []
        return Answer(status: Int(response.status.code), json: (try? JSON.parse(bytes)) ?? .null)
    }

    /// `GET` of an upload URL: `{"receivedBytes": N}`, or the `singleFile` of a finished upload.
    func status(of url: String) async throws -> Answer {
        let response = try await http.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
        let buffer = try await response.body.collect(upTo: 1 << 20)
        return Answer(status: Int(response.status.code), json: (try? JSON.parse(buffer.readableBytesView)) ?? .null)
    }

    /// The `singleFile` of a finished upload, checked against the file's checksum and size.
    static func singleFile(_ answer: Answer, checksum: String, size: Int64) throws -> JSON {
        guard answer.status == 200, let singleFile = answer.singleFile else {
            throw BenchError("the upload answered \(answer.status): \(answer.json.serialized().prefix(300))")
        }
        guard singleFile["fileChecksum"]?.string == checksum, singleFile["size"]?.int64 == size else {
            throw BenchError("the server stored other bytes than were sent: \(singleFile.serialized().prefix(300))")
        }
        return singleFile
    }

    /// `records/modify` creating record `recordName` with the upload attached to its `file` field.
    func attach(_ singleFile: JSON, recordName: String) async throws {
        let body: JSON = [
            "zoneID": ["zoneName": "_defaultZone"],
            "operations": [
                [
                    "operationType": "create",
                    "record": [
                        "recordName": .string(recordName), "recordType": .string(Self.recordType),
                        "fields": .object([Self.field: ["value": singleFile, "type": "ASSETID"]]),
                    ],
                ]
            ],
        ]
        let (status, json) = try await api.post("records/modify", body.serializedBytes())
        guard status == 200, let item = json["records"]?.array?.first, item["serverErrorCode"] == nil else {
            throw BenchError("records/modify with the asset answered \(status): \(json.serialized().prefix(300))")
        }
    }

    /// The whole upload as a client does it: upload URL, streamed `POST`, `records/modify`.
    func upload(_ path: String, size: Int64, checksum: String, recordName: String) async throws {
        let url = try await uploadURL(recordName: recordName)
        let answer = try await post(file: path, size: size, to: url)
        try await attach(try Self.singleFile(answer, checksum: checksum, size: size), recordName: recordName)
    }

    /// A WebDAV `PUT` of the whole file to `url` (the nginx yardstick), sent as ``upload(_:size:checksum:recordName:)`` sends it.
    func put(_ path: String, size: Int64, to url: String) async throws {
        let answer = try await post(file: path, size: size, to: url, method: .PUT)
        guard answer.status == 201 || answer.status == 204 else { throw BenchError("the PUT to \(url) answered \(answer.status)") }
    }

    /// `records/lookup` of a record: its `file` asset's download URL, `${f}` filled in.
    func downloadURL(recordName: String) async throws -> (url: String, size: Int64) {
        let body: JSON = ["zoneID": ["zoneName": "_defaultZone"], "records": [["recordName": .string(recordName)]]]
        let (status, json) = try await api.post("records/lookup", body.serializedBytes())
        guard status == 200, let asset = json["records"]?.array?.first?["fields"]?[Self.field]?["value"],
            let url = asset["downloadURL"]?.string, let size = asset["size"]?.int64
        else {
            throw BenchError("records/lookup answered no downloadURL (\(status)): \(json.serialized().prefix(300))")
        }
        return (url.replacingOccurrences(of: "${f}", with: "bench.bin"), size)
    }

    /// The whole download as a client does it: `records/lookup`, then the `GET` streamed into
    /// `path`. Returns the bytes written.
    func download(recordName: String, to path: String) async throws -> Int64 {
        let (url, size) = try await downloadURL(recordName: recordName)
        return try await get(url, size: size, to: path)
    }

    /// A `GET` of `url` streamed into `path` (no fsync), which must come to `size` bytes.
    func get(_ url: String, size: Int64, to path: String) async throws -> Int64 {
        let response = try await http.execute(HTTPClientRequest(url: url), timeout: Self.timeout)
        guard response.status == .ok else {
            let text = try await response.body.collect(upTo: 1 << 20)
            throw BenchError("the download answered \(response.status.code): \(String(buffer: text).prefix(300))")
        }
        var sink = try FileSink(path: path)
        for try await buffer in response.body { try sink.write(buffer) }
        guard sink.written == size else {
            throw BenchError("the download wrote \(sink.written) bytes; the asset has \(size)")
        }
        return sink.written
    }
}
