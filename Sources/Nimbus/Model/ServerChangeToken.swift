import NimbusProtocol

/// An opaque position in a change feed (a zone's records, a database's zones). Persist it
/// (it is `Codable`) and pass it back to fetch only what changed since.
public struct ServerChangeToken: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The token text the server issued (`package`: NimbusCloudKit archives it in a
    /// `CKServerChangeToken`).
    package let rawValue: String

    package init(rawValue: String) {
        self.rawValue = rawValue
    }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { "ServerChangeToken(\(rawValue))" }
}
