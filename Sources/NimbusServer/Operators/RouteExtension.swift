import Hummingbird
import Logging
import NimbusStore

/// Routes a server serves beside the API, added by another module (the dashboard) so that
/// NimbusServer does not depend on it. ``ServerConfiguration/routeExtensions`` lists them;
/// ``RunningServer/start(_:handleSignals:logger:delivery:)`` adds each to its router after
/// the API's own routes.
package protocol RouteExtension: Sendable {
    /// Adds the extension's routes to the server's router.
    func addRoutes(to router: Router<BasicRequestContext>, server: ServerParts)
}

/// The parts of a running server a route extension works with: the same store, API, push hub
/// and statistics as the HTTP API.
package struct ServerParts: Sendable {
    /// The storage engine (also provisioning: containers, tokens, keys, operators).
    package let store: any NimbusStorage
    /// The CloudKit API's handlers, called as an operator.
    package let gateway: OperatorGateway
    /// Connected push devices.
    package let push: PushHub
    /// What this node served.
    package let statistics: RequestStatistics
    package let configuration: ServerConfiguration
    package let logger: Logger
    /// Bcrypt, as built-in accounts use it, off the cooperative pool.
    package let passwords: PasswordHasher
    /// This node's spans of traced changes, on their way to the store.
    package let traces: TraceJournal
    /// The server's last log lines, if its logger writes them there.
    package var logTail: LogTail? { configuration.logTail }
}

extension ServerParts {
    /// The IP address of the client whose request is being handled, as the socket says
    /// (for throttling sign-ins); `nil` outside a request.
    package var peerAddress: String? { PeerAddress.current }
}
