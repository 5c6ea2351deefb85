import NimbusProtocol

/// Identifies one logical database: a container's environment, a scope and an owner.
///
/// Every user's private database is independent of every other's; the public database of a
/// container environment has the owner ``DatabaseKey/publicOwner``.
public struct DatabaseKey: Sendable, Hashable, CustomStringConvertible {
    /// The owner record name of the public database (and of its zones).
    public static let publicOwner = "_defaultOwner"

    public var container: String
    public var environment: ContainerEnvironment
    public var scope: DatabaseScope
    /// The user record name of the owner (``publicOwner`` for the public database).
    public var owner: String

    public init(container: String, environment: ContainerEnvironment, scope: DatabaseScope, owner: String) {
        self.container = container
        self.environment = environment
        self.scope = scope
        self.owner = owner
    }

    public var description: String { "\(container)/\(environment.rawValue)/\(scope.rawValue)/\(owner)" }
}
