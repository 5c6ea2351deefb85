import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A WebSocket client that completes the upgrade and then never reads again: a dead or
/// stalled device, as the server sees one (it answers no ping and drains no byte).
struct StalledWebSocket: Sendable {
    let descriptor: Int32

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Connects to `127.0.0.1:port`, upgrades `path` (with its query), checks for `101`.
    /// The receive buffer is made as small as the kernel allows, so the server's writes back up fast.
    ///
    /// The blocking socket calls run on a thread of their own: on the cooperative pool they
    /// would hold a thread the server needs to answer (there may be only two).
    static func open(port: Int, path: String) async throws -> StalledWebSocket {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result { try openBlocking(port: port, path: path) })
            }.start()
        }
    }

    private static func openBlocking(port: Int, path: String) throws -> StalledWebSocket {
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw Failure(description: "socket() failed") }
        var size: Int32 = 1024
        setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            closeDescriptor(descriptor)
            throw Failure(description: "connect() failed")
        }
        let request =
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        let bytes = Array(request.utf8)
        guard bytes.withUnsafeBytes({ send(descriptor, $0.baseAddress, $0.count, 0) }) == bytes.count else {
            closeDescriptor(descriptor)
            throw Failure(description: "send() failed")
        }
        // Read the response head byte by byte, so no frame after it is consumed.
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.ends(with: Array("\r\n\r\n".utf8)) {
            guard recv(descriptor, &byte, 1, 0) == 1 else {
                closeDescriptor(descriptor)
                throw Failure(description: "the server closed the connection during the upgrade")
            }
            head.append(byte)
        }
        let text = String(decoding: head, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.1 101") else {
            closeDescriptor(descriptor)
            throw Failure(description: "the upgrade was refused: \(text)")
        }
        return StalledWebSocket(descriptor: descriptor)
    }

    func close() {
        Self.closeDescriptor(descriptor)
    }

    private static func closeDescriptor(_ descriptor: Int32) {
        #if canImport(Glibc)
        _ = Glibc.close(descriptor)
        #else
        _ = Darwin.close(descriptor)
        #endif
    }
}

extension Array where Element: Equatable {
    fileprivate func ends(with suffix: [Element]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
