import Hummingbird
import NimbusProtocol
import NimbusStore

/// The CloudKit API as the dashboard calls it: the same handlers, rules and store as
/// `POST /database/1/…`, with an operator in place of an API token or a server-to-server
/// key. An operator acts in a container's public database as its administrator (as a
/// server-to-server key does), and reads a user's private database as that user.
///
/// Bodies and answers are the wire JSON of the HTTP API, so what the dashboard sends is what
/// the curl it shows would send.
package struct OperatorGateway: Sendable {
    let api: CloudKitAPI
    let assetLinks: AssetLinks?
    let assetDownloadLifetime: Int64
    let origins: OriginPolicy

    /// Runs one operation and returns its response body.
    /// - Parameters:
    ///   - user: in the private scope, the user whose database is read (the caller checks
    ///     the container allows it and writes the audit log).
    ///   - origin: `scheme://host` the operator's browser reached the server at (asset URLs).
    /// - Throws: ``CloudKitError`` as the API would answer it.
    package func perform(
        _ operation: APIOperation, container: String, environment: ContainerEnvironment,
        scope: DatabaseScope = .public, user: UserIdentity? = nil, body: JSON, operatorName: String,
        request: Request? = nil
    ) async throws -> JSON {
        let identity = RequestIdentity(
            container: container, environment: environment, scope: scope, user: user,
            serverKeyID: user == nil ? "operator-\(operatorName)" : nil, deviceID: "dashboard")
        let reader = WireReader(body)
        _ = try reader.object()
        let arrival = request.map(RequestArrival.init) ?? RequestArrival(authority: nil)
        let call = APICall(
            operation: operation, identity: identity, body: reader,
            numbersAsStrings: try reader.optionalBool("numbersAsStrings") ?? false,
            origin: origins.responseOrigin(arrival), mailOrigin: origins.mailOrigin(arrival),
            assetLinks: assetLinks, assetDownloadLifetime: assetDownloadLifetime, now: api.now())
        let answer = try await api.handle(call)
        // `.raw` members (pre-serialized records) become values the caller can read.
        return try JSON.parse(answer.serializedBytes())
    }
}
