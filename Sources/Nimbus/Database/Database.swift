import Foundation
import NimbusProtocol

/// One database of a container: the public database, or the signed-in user's private or
/// shared database. The SDK's counterpart of `CKDatabase`.
///
/// Every method sends one or more requests and returns when they have answered; cancelling
/// the calling task cancels the request in flight and throws
/// ``NimbusError/Code/operationCancelled``. Failures are ``NimbusError``s.
public struct Database: Sendable {
    /// Which database.
    public enum Scope: String, Sendable, Hashable, CaseIterable {
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
