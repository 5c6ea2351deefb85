import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// The operators' dashboard: server-rendered pages at `/dashboard/…` (and a redirect from
/// `/`) to sign in as an operator, manage containers, their API tokens and server-to-server
/// keys, browse and edit the public database, run queries, compare and deploy schemas, and
/// watch the node live.
///
/// Every page reads and writes through the same store, schema rules and API handlers as
/// the CloudKit API (``OperatorGateway``): a record saved here is saved as `records/modify`
/// saves it, change tag and all.
///
/// ```swift
/// var configuration = ServerConfiguration()
/// configuration.routeExtensions = [Dashboard()]
/// let server = try await RunningServer.start(configuration)   // dashboard at server.baseURL + "/"
/// ```
public struct Dashboard: RouteExtension {
    /// How long an operator stays signed in.
    public var sessionLifetime: Duration

    /// A dashboard whose operator sessions last `sessionLifetime` (12 hours by default).
    public init(sessionLifetime: Duration = .seconds(12 * 3600)) {
        self.sessionLifetime = sessionLifetime
    }

    package func addRoutes(to router: Router<BasicRequestContext>, server: ServerParts) {
        let app = DashboardApp(server: server, sessionLifetime: sessionLifetime)
        DashboardRoutes.add(to: router, app: app)
    }
}
