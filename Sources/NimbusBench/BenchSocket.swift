// The push bench's raw sockets exist on Linux only (epoll, SO_TIMESTAMPNS).
#if os(Linux)
import CBenchSockets
import Foundation

/// When bytes the server sent reached the bench, on CLOCK_REALTIME in nanoseconds: the
/// kernel's receive time of the last segment that completed them (`SO_TIMESTAMPNS`), and
/// when the bench's own thread read them.
///
/// The kernel's time is when the bytes were *on the device*: what a phone elsewhere would
/// see. The read time adds however long the bench's thread — which shares the machine's
/// cores with the servers it measures — took to get to that socket.
struct Arrival: Sendable {
    var kernel: Int64
    var read: Int64

    /// Milliseconds from `earlier` to this arrival, on the kernel's clock.
    func milliseconds(after earlier: Int64) -> Double { Double(kernel - earlier) / 1_000_000 }
}

/// The `host:port` and target of a `http://` or `ws://` URL, for the bench's raw sockets
/// (IPv4 literals and `localhost`: the bench only talks to servers it started).
struct BenchEndpoint: Sendable {
    var host: String
    var port: Int
    var target: String

    init(_ url: String) throws {
        guard let components = URLComponents(string: url), let host = components.host, let port = components.port else {
            throw BenchError("not a scheme://host:port/… URL: \(url)")
        }
        self.host = host == "localhost" ? "127.0.0.1" : host
        self.port = port
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        self.target = path + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
    }
}

/// The bench's blocking socket calls, with errors that say which call failed.
enum BenchSocket {
    /// The current CLOCK_REALTIME, in nanoseconds (the clock of ``Arrival``).
    static var now: Int64 { cbench_realtime_ns() }

    /// A TCP connection with TCP_NODELAY and kernel receive timestamps.
    static func connect(_ endpoint: BenchEndpoint) throws -> Int32 {
        let fd = cbench_connect(endpoint.host, Int32(endpoint.port))
        guard fd >= 0 else { throw BenchError("connect to \(endpoint.host):\(endpoint.port): \(describe(fd))") }
        return fd
    }

    /// Sends every byte (on a blocking socket), or throws.
    static func send(_ fd: Int32, _ bytes: [UInt8]) throws {
        let sent = bytes.withUnsafeBufferPointer { cbench_send(fd, $0.baseAddress, $0.count) }
        guard sent == bytes.count else { throw BenchError("send: \(sent < 0 ? describe(Int32(sent)) : "short write")") }
    }

    static func setNonBlocking(_ fd: Int32) throws {
        let result = cbench_set_nonblocking(fd)
        guard result == 0 else { throw BenchError("fcntl O_NONBLOCK: \(describe(result))") }
    }

    /// The index just past an HTTP head's `\r\n\r\n`, once the head is complete.
    static func endOfHTTPHead(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count
        where bytes[index] == 10 && bytes[index - 1] == 13 && bytes[index - 2] == 10 && bytes[index - 3] == 13 {
            return index + 1
        }
        return nil
    }

    /// `-errno` as text.
    static func describe(_ negativeErrno: Int32) -> String { String(cString: strerror(-negativeErrno)) }
}
#endif
