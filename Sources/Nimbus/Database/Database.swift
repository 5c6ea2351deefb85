import Foundation
import NimbusProtocol

/// One database of a container: the public database, or the signed-in user's private or
/// shared database. The SDK's counterpart of `CKDatabase`.
///
/// Every method sends one or more requests and returns when they have answered; cancelling
/// the calling task cancels the request in flight and throws
/// ``NimbusError/Code/operationCancelled``. Failures are ``NimbusError``s.
public struct Database: Sendable {
    /// Which database: NimbusProtocol's ``DatabaseScope``, the one type the server and the
    /// SDK share.
    public typealias Scope = DatabaseScope

    public let container: Container
    public let scope: Scope

    public init(container: Container, scope: Scope) {
        self.container = container
        self.scope = scope
    }

    /// The URL path of an operation, which server-to-server signatures cover.
    func subpath(_ operation: String) -> String {
        "/database/1/\(container.identifier)/\(container.environment.rawValue)/\(scope.rawValue)/\(operation)"
    }
}
