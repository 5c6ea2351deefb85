#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A range of IP addresses in CIDR notation (`10.0.0.0/8`, `fd00::/8`, or one address):
/// the proxies an operator names with `--trusted-proxy`, whose forwarding headers the server
/// believes.
///
/// ```swift
/// let proxies = try AddressRange("10.0.0.0/8")
/// proxies.contains("10.1.2.3")          // true
/// proxies.contains("::ffff:10.1.2.3")   // true: an IPv4 address on an IPv6 socket
/// ```
public struct AddressRange: Sendable, Hashable, CustomStringConvertible {
    /// The network's bytes: 4 (IPv4) or 16 (IPv6).
    let network: [UInt8]
    /// How many leading bits must match.
    let prefixLength: Int
    public let description: String

    /// Parses `address` or `address/prefix`.
    /// - Throws: ``OriginSettingError`` when it is neither.
    public init(_ text: String) throws(OriginSettingError) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard let bytes = Self.bytes(of: parts[0]) else {
            throw OriginSettingError("--trusted-proxy takes an IP address or a CIDR range (10.0.0.0/8, fd00::/8), got '\(text)'")
        }
        let bits = bytes.count * 8
        var prefix = bits
        if parts.count == 2 {
            guard let value = Int(parts[1]), (0...bits).contains(value), parts[1].allSatisfy(\.isASCII) else {
                throw OriginSettingError("--trusted-proxy '\(text)': the prefix length must be 0 to \(bits)")
            }
            prefix = value
        }
        self.network = Self.masked(bytes, prefix: prefix)
        self.prefixLength = prefix
        self.description = parts.count == 2 ? text : "\(text)/\(bits)"
    }

    /// Whether `address` (as the socket reports a peer) is in the range. An IPv4-mapped IPv6
    /// address (`::ffff:a.b.c.d`) counts as its IPv4 address.
    public func contains(_ address: String) -> Bool {
        guard var bytes = Self.bytes(of: address) else { return false }
        if bytes.count == 16, network.count == 4, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            bytes = Array(bytes[12...])
        }
        guard bytes.count == network.count else { return false }
        return Self.masked(bytes, prefix: prefixLength) == network
    }

    /// The loopback ranges, `127.0.0.0/8` and `::1`.
    static let loopback: [AddressRange] = [try! AddressRange("127.0.0.0/8"), try! AddressRange("::1")]

    /// The bytes of an IPv4 or IPv6 address; `nil` for anything else (a host name, a zone ID).
    static func bytes(of text: String) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.count <= 45 else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }

    private static func masked(_ bytes: [UInt8], prefix: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let keep = max(0, min(8, prefix - index * 8))
            return keep == 0 ? 0 : byte & UInt8(truncatingIfNeeded: 0xFF << (8 - keep))
        }
    }
}
