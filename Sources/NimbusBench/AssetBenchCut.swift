import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An upload whose connection drops mid-way, for the resume run: a `POST` announcing the
/// whole file, the first bytes written straight into a TCP socket, then the socket closed.
///
/// Not through the HTTP client: AsyncHTTPClient hands each body buffer to its event loop
/// without waiting for the socket, so when the body stream fails, buffers still queued there
/// (MBs when the server reads slowly) are dropped unsent, yet the body stream counted them
/// as sent. Every byte counted here was accepted by the kernel, which delivers it before
/// the close on loopback: what the server holds afterwards is what it kept of what it got.
enum CutUpload {
    /// Sends the head of a `POST` of `total` bytes to `url` and the bytes `range` of the
    /// file at `path`, then closes the connection. Returns the body bytes sent.
    static func post(_ path: String, range: Range<Int64>, total: Int64, to url: String) async throws -> Int64 {
        guard let components = URLComponents(string: url), components.scheme == "http", let host = components.host,
            let port = components.port
        else { throw BenchError("the cut upload needs an http://IPv4:port URL, not \(url)") }
        let head = "POST \(components.percentEncodedPath) HTTP/1.1\r\nHost: \(host):\(port)\r\n"
            + "Content-Type: application/octet-stream\r\nContent-Length: \(total)\r\n\r\n"
        // Blocking calls: on a thread of their own, not the tasks' (the server shares them).
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try send(head, path: path, range: range, host: host, port: port) })
            }
        }
    }

    private static func send(_ head: String, path: String, range: Range<Int64>, host: String, port: Int) throws -> Int64 {
        let socketFD = try openConnection(host: host, port: port)
        defer { close(socketFD) }
        let fileFD = open(path, O_RDONLY)
        guard fileFD >= 0 else { throw BenchError("cannot open \(path): errno \(errno)") }
        defer { close(fileFD) }
        try Array(head.utf8).withUnsafeBytes { try BenchFiles.writeAll(socketFD, $0, path: "the socket") }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: BenchFiles.bodyChunkSize, alignment: 4096)
        defer { buffer.deallocate() }
        var position = range.lowerBound
        while position < range.upperBound {
            let want = Int(min(Int64(buffer.count), range.upperBound - position))
            let count = pread(fileFD, buffer.baseAddress, want, off_t(position))
            guard count > 0 else { throw BenchError("reading \(path) at \(position) failed: errno \(errno)") }
            try BenchFiles.writeAll(socketFD, UnsafeRawBufferPointer(rebasing: buffer[0..<count]), path: "the socket")
            position += Int64(count)
        }
        return position - range.lowerBound
    }

    private static func openConnection(host: String, port: Int) throws -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw BenchError("the cut upload needs an IPv4 address, not \(host)")
        }
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw BenchError("socket() failed: errno \(errno)") }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let failed = errno
            close(fd)
            throw BenchError("connecting to \(host):\(port) failed: errno \(failed)")
        }
        return fd
    }
}
