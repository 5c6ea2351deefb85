/// The container environment: `development` or `production`, as in the request path.
/// Schema changes happen in development; production runs on the deployed schema.
public enum ContainerEnvironment: String, Sendable, Hashable, CaseIterable, Codable {
    case development
    case production
}

/// Which database of a container, as in the request path: the public database, the
/// signed-in user's private database, or the records others share with them.
public enum DatabaseScope: String, Sendable, Hashable, CaseIterable, Codable {
    case `public`
    case `private`
    case shared

    /// The number CloudKit uses in push payloads (`dbs`): 1 public, 2 private, 3 shared.
    public var pushCode: Int {
        switch self {
        case .public: return 1
        case .private: return 2
        case .shared: return 3
        }
    }

    /// The scope for a push payload's `dbs` number.
    public init?(pushCode: Int64) {
        switch pushCode {
        case 1: self = .public
        case 2: self = .private
        case 3: self = .shared
        default: return nil
        }
    }
}
