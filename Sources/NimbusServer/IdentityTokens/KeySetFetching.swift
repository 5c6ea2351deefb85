import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// The seam through which the server reads identity issuers' published documents (the
/// OpenID configuration and the JWKS): HTTPS in production, a test's local issuer in tests.
public protocol KeySetFetching: Sendable {
    /// The body of a `GET` of `url`, at most ``maxDocumentBytes``; throws when the answer is
    /// not 200 or is larger.
    func document(at url: URL) async throws -> [UInt8]
}

extension KeySetFetching {
    /// Issuers' documents are a few kilobytes; anything past this is refused.
    public var maxDocumentBytes: Int { 1 << 20 }
}

/// Fetches issuers' documents with AsyncHTTPClient: `https` only, except on a loopback address
/// (a development issuer on this machine), within a 10-second timeout.
public struct HTTPKeySetFetcher: KeySetFetching {
    public init() {}

    public func document(at url: URL) async throws -> [UInt8] {
        guard Self.allowed(url) else {
            throw KeySetFetchError("\(url.absoluteString) is not an https URL; issuers publish their keys over https")
        }
        var request = HTTPClientRequest(url: url.absoluteString)
        request.headers.add(name: "Accept", value: "application/json")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        guard response.status == .ok else {
            throw KeySetFetchError("\(url.absoluteString) answered HTTP \(response.status.code)")
        }
        let body = try await response.body.collect(upTo: maxDocumentBytes)
        return Array(body.readableBytesView)
    }

    /// `https`, or `http` to a loopback host.
    static func allowed(_ url: URL) -> Bool {
        switch url.scheme?.lowercased() {
        case "https": return true
        case "http": return ["127.0.0.1", "localhost", "::1", "[::1]"].contains(url.host?.lowercased() ?? "")
        default: return false
        }
    }
}

/// Why an issuer's document could not be read.
public struct KeySetFetchError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
