// The push bench's raw sockets exist on Linux only (epoll, SO_TIMESTAMPNS).
#if os(Linux)
import CBenchSockets
import Foundation

/// Device A's side of `nimbus-bench push`: one HTTP/1.1 keep-alive connection on a
/// blocking socket, whose answers are stamped with the kernel's arrival time of their last
/// segment — the same clock as the devices' pushes (``Arrival``), so answer→push compares
/// two arrivals on this machine and neither side's thread scheduling is in it.
///
/// It speaks the little of HTTP/1.1 the bench needs: a request with a body, and an answer
/// with `Content-Length` (which is how Nimbus answers).
final class BenchHTTPConnection {
    private let fd: Int32
    private let host: String
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var received: [UInt8] = []

    init(_ base: String) throws {
        let endpoint = try BenchEndpoint(base)
        fd = try BenchSocket.connect(endpoint)
        host = "\(endpoint.host):\(endpoint.port)"
    }

    deinit { cbench_close(fd) }

    struct Answer {
        var status: Int
        var body: [UInt8]
        /// When the request's first byte was handed to the kernel.
        var sent: Int64
        var arrival: Arrival
    }

    /// POSTs `body` to `target` (path and query) and reads the whole answer.
    func post(_ target: String, headers: [(String, String)], body: [UInt8]) throws -> Answer {
        var head = "POST \(target) HTTP/1.1\r\nHost: \(host)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let request = Array((head + "\r\n").utf8) + body
        let sent = BenchSocket.now
        try BenchSocket.send(fd, request)
        return try readAnswer(sent: sent)
    }

    private func readAnswer(sent: Int64) throws -> Answer {
        var arrival = Arrival(kernel: 0, read: 0)
        var headEnd: Int?
        var contentLength = 0
        var status = 0
        while true {
            if headEnd == nil, let end = received.withUnsafeBufferPointer(BenchSocket.endOfHTTPHead) {
                headEnd = end
                (status, contentLength) = try Self.parseHead(received[..<end])
            }
            if let end = headEnd, received.count >= end + contentLength {
                let body = Array(received[end..<(end + contentLength)])
                received.removeFirst(end + contentLength)
                return Answer(status: status, body: body, sent: sent, arrival: arrival)
            }
            var kernel: Int64 = 0
            let count = buffer.withUnsafeMutableBufferPointer { cbench_receive(fd, $0.baseAddress, $0.count, &kernel) }
            let read = BenchSocket.now
            guard count > 0 else {
                throw BenchError(count == 0 ? "the server closed the connection" : "recv: \(BenchSocket.describe(Int32(count)))")
            }
            received += buffer[..<count]
            arrival = Arrival(kernel: kernel == 0 ? read : kernel, read: read)
        }
    }

    private static func parseHead(_ head: ArraySlice<UInt8>) throws -> (status: Int, contentLength: Int) {
        let lines = String(decoding: head, as: UTF8.self).split(separator: "\r\n")
        let statusLine = lines.first.map(String.init) ?? ""
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw BenchError("not an HTTP/1.1 answer: \(statusLine.prefix(80))")
        }
        var contentLength: Int?
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if name == "content-length" { contentLength = Int(value) }
            if name == "transfer-encoding" { throw BenchError("the bench's HTTP client reads only Content-Length answers") }
        }
        guard let length = contentLength else { throw BenchError("an answer without Content-Length (status \(status))") }
        return (status, length)
    }
}
#endif
