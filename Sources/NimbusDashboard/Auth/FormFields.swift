import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// An `application/x-www-form-urlencoded` body: names to values (the last one wins).
/// Malformed escapes are kept as sent; nothing in a body makes reading it fail but its size.
struct FormFields: Sendable {
    static let limit = 2 << 20
    private(set) var values: [String: String]

    init(_ values: [String: String]) { self.values = values }

    subscript(name: String) -> String? { values[name] }

    /// Reads and parses the request's body (at most ``limit`` bytes).
    static func read(_ request: inout Request) async throws -> FormFields {
        let buffer = try await request.collectBody(upTo: limit)
        return parse(String(buffer: buffer))
    }

    static func parse(_ text: String) -> FormFields {
        var values: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = decode(parts[0])
            values[name] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return FormFields(values)
    }

    private static func decode(_ text: Substring) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}
