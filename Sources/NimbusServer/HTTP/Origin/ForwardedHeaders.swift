import Foundation
import HTTPTypes

/// What a reverse proxy says the client asked for: the host and scheme of `Forwarded`
/// (RFC 7239) or, without it, `X-Forwarded-Host` and `X-Forwarded-Proto`. Read only from a
/// peer the operator trusts (``OriginSettings/trustedProxies``).
///
/// Of a list (`a.example, b.example`) the **last** element counts: it is the one the trusted
/// proxy, the server's own peer, wrote; the earlier ones came from further away, and a client
/// can write any it likes. The proxy must set these headers, not pass on the client's.
struct ForwardedHeaders: Equatable {
    var host: String?
    var scheme: String?

    static let forwarded = HTTPField.Name("Forwarded")!
    static let forwardedHost = HTTPField.Name("X-Forwarded-Host")!
    static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")!

    init(host: String? = nil, scheme: String? = nil) {
        self.host = host
        self.scheme = scheme
    }

    /// The forwarded host and scheme of `headers`, each `nil` when absent or malformed.
    init(_ headers: HTTPFields) {
        if let forwarded = Self.joined(headers, Self.forwarded) {
            let element = Self.lastElement(of: forwarded).map(Self.pairs) ?? [:]
            host = element["host"].flatMap { Authority.isPlain($0) ? $0 : nil }
            scheme = element["proto"].flatMap(Self.parseScheme)
        } else {
            host = Self.joined(headers, Self.forwardedHost).flatMap(Self.lastElement).flatMap {
                Authority.isPlain($0) ? $0 : nil
            }
            scheme = Self.joined(headers, Self.forwardedProto).flatMap(Self.lastElement).flatMap(Self.parseScheme)
        }
    }

    /// `http` or `https`, lowercased; `nil` for anything else.
    static func parseScheme(_ value: String) -> String? {
        let value = value.lowercased()
        return value == "http" || value == "https" ? value : nil
    }

    /// Every field of a name as one list, as HTTP reads repeated fields.
    private static func joined(_ headers: HTTPFields, _ name: HTTPField.Name) -> String? {
        let values = headers[values: name]
        return values.isEmpty ? nil : values.joined(separator: ",")
    }

    /// The last comma-separated element, trimmed, outside quoted strings.
    private static func lastElement(of value: String) -> String? {
        var elements: [String] = [""]
        var quoted = false
        for character in value {
            if character == "\"" { quoted.toggle() }
            if character == ",", !quoted { elements.append("") } else { elements[elements.count - 1].append(character) }
        }
        let last = elements.last?.trimmingCharacters(in: .whitespaces) ?? ""
        return last.isEmpty ? nil : last
    }

    /// `name=value` pairs of one `Forwarded` element, names lowercased, quotes removed.
    private static func pairs(_ element: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in element.split(separator: ";") {
            guard let equals = pair.firstIndex(of: "=") else { continue }
            let name = pair[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            var value = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            if result[name] == nil { result[name] = value }
        }
        return result
    }
}
