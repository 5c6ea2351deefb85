import Foundation

/// An error in CloudKit Web Services form: a code, a human-readable reason and, when the
/// error concerns one item, that item's identity.
///
/// The server throws it from any layer; the HTTP layer renders it as
/// `{uuid, serverErrorCode, reason, retryAfter?, recordName?, zoneID?}`. Per-item errors in
/// `records[]` and `zones[]` use the same shape.
public struct CloudKitError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: ServerErrorCode
    public var reason: String
    public var recordName: String?
    public var zoneID: ZoneID?
    /// Seconds the client should wait before retrying (THROTTLED, TRY_AGAIN_LATER).
    public var retryAfter: Int?
    /// Nimbus extension on CONFLICT: the server's current record, so the client can merge
    /// without another round trip.
    public var serverRecord: Record?
    /// On AUTHENTICATION_REQUIRED: where the user signs in (CloudKit's `redirectURL`).
    public var redirectURL: String?

    public init(
        _ code: ServerErrorCode, _ reason: String, recordName: String? = nil, zoneID: ZoneID? = nil,
        retryAfter: Int? = nil, serverRecord: Record? = nil
    ) {
        self.code = code
        self.reason = reason
        self.recordName = recordName
        self.zoneID = zoneID
        self.retryAfter = retryAfter
        self.serverRecord = serverRecord
    }

    public var description: String { "\(code.rawValue): \(reason)" }

    /// Shorthand for a BAD_REQUEST error.
    public static func badRequest(_ reason: String) -> CloudKitError { CloudKitError(.badRequest, reason) }
}
