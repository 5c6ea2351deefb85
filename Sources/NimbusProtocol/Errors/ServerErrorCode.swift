/// The `serverErrorCode` values of CloudKit Web Services, with the HTTP status each one
/// travels with.
///
/// Nimbus adds one code beyond Apple's list, ``changeTokenExpired``, so that a client
/// holding a token from before the tombstone horizon knows to refetch from no token.
public enum ServerErrorCode: String, Sendable, Hashable, CaseIterable, Codable {
    case accessDenied = "ACCESS_DENIED"
    case atomicError = "ATOMIC_ERROR"
    case authenticationFailed = "AUTHENTICATION_FAILED"
    case authenticationRequired = "AUTHENTICATION_REQUIRED"
    case badRequest = "BAD_REQUEST"
    case conflict = "CONFLICT"
    case exists = "EXISTS"
    case internalError = "INTERNAL_ERROR"
    case notFound = "NOT_FOUND"
    case quotaExceeded = "QUOTA_EXCEEDED"
    case throttled = "THROTTLED"
    case tryAgainLater = "TRY_AGAIN_LATER"
    case validatingReferenceError = "VALIDATING_REFERENCE_ERROR"
    case zoneNotFound = "ZONE_NOT_FOUND"
    /// Nimbus extension: the sync token predates the tombstone retention window (HTTP 410).
    /// Discard the token and fetch again from no token.
    case changeTokenExpired = "CHANGE_TOKEN_EXPIRED"
    /// Nimbus extension: the request carries more items than the server accepts at once
    /// (HTTP 400). Split the batch.
    case limitExceeded = "LIMIT_EXCEEDED"

    /// The HTTP status CloudKit Web Services uses for this code.
    public var httpStatus: Int {
        switch self {
        case .accessDenied: return 403
        case .atomicError: return 400
        case .authenticationFailed: return 401
        case .authenticationRequired: return 421
        case .badRequest: return 400
        case .conflict: return 409
        case .exists: return 409
        case .internalError: return 500
        case .notFound: return 404
        case .quotaExceeded: return 413
        case .throttled: return 429
        case .tryAgainLater: return 503
        case .validatingReferenceError: return 412
        case .zoneNotFound: return 404
        case .changeTokenExpired: return 410
        case .limitExceeded: return 400
        }
    }
}
