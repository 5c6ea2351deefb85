import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP listener on loopback that accepts one connection, reads the request head, reports
/// it, and never answers: a server that hangs.
final class SilentServer: Sendable {
    let port: Int
    /// Yields once a full request head has arrived.
    let requestReceived: AsyncStream<Void>
    private let socketFD: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TimedOut(what: "a socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 4) == 0 else { throw TimedOut(what: "a listening socket") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        socketFD = fd
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        requestReceived = stream
        Thread.detachNewThread {
            let connection = accept(fd, nil, nil)
            guard connection >= 0 else { return }
            var received = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(connection, &buffer, buffer.count, 0)
                if count <= 0 { break }
                received += buffer[..<count]
                if received.count >= 4, String(decoding: received, as: UTF8.self).contains("\r\n\r\n") {
                    continuation.yield()
                }
            }
            close(connection)
        }
    }

    func stop() {
        shutdown(socketFD, Int32(SHUT_RDWR))
        close(socketFD)
    }
}
