import Foundation
import Nimbus

/// Fetches a web auth token for the signed-in user, which a web service appends with
/// ``apiToken`` to its CloudKit Web Services requests to act on the user's behalf: CloudKit's
/// `CKFetchWebAuthTokenOperation`. ``fetchWebAuthTokenResultBlock``, then the deprecated
/// ``fetchWebAuthTokenCompletionBlock``.
///
/// On Nimbus the token opens a new session of the user in the operation's container
/// (`sessions/create`, sent with ``apiToken``, which must be that container's: another is
/// refused with ``CKError/Code/notAuthenticated``). Unlike CloudKit's, the token is not
/// single-use: it lasts as any session does, and the user sees it in their list of
/// sessions and may revoke it there; the app's own token is unchanged.
///
/// `@unchecked Sendable`: see ``CKOperation``.
open class CKFetchWebAuthTokenOperation: CKDatabaseOperation, @unchecked Sendable {
    /// The API token the web service will use (CloudKit's `APIToken`).
    @Protected public var apiToken: String? = nil
    @Protected public var fetchWebAuthTokenResultBlock: (@Sendable (Result<String, any Error>) -> Void)? = nil
    @Protected public var fetchWebAuthTokenCompletionBlock: (@Sendable (String?, (any Error)?) -> Void)? = nil
    private let token = Locked<String?>(nil)

    public override init() {
        super.init()
    }

    public convenience init(apiToken: String) {
        self.init()
        self.apiToken = apiToken
    }

    override func execute() async {
        guard let apiToken, !apiToken.isEmpty else {
            return finishReporting(CKError(.invalidArguments, message: "set apiToken before running the operation"))
        }
        guard let container = targetDatabase.nimbus?.container else { return finishReporting(CKError.notConfigured) }
        await fetchThenDeliver({ try await container.openWebServiceSession(apiToken: apiToken).webAuthToken }) { fetched in
            token.withLock { $0 = fetched }
        }
    }

    override func reportFinal(_ error: CKError?) {
        let fetched = token.current
        if let error {
            fetchWebAuthTokenResultBlock?(.failure(error))
            fetchWebAuthTokenCompletionBlock?(nil, error)
        } else if let fetched {
            fetchWebAuthTokenResultBlock?(.success(fetched))
            fetchWebAuthTokenCompletionBlock?(fetched, nil)
        }
    }
}
