extension CKError {
    /// What went wrong: CloudKit's `CKError.Code`, with CloudKit's raw values (`CKErrorCode`), so
    /// codes stored or logged as integers read the same.
    public enum Code: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// A nonrecoverable error inside the client or the server.
        case internalError = 1
        /// Some items of a batch failed: see ``CKError/partialErrorsByItemID``.
        case partialFailure = 2
        /// The server could not be reached.
        case networkUnavailable = 3
        /// The request was sent, but the connection failed or timed out before a response.
        case networkFailure = 4
        /// The container is unknown to the server, or no server is configured.
        case badContainer = 5
        /// The server is unavailable for now: retry after ``CKError/retryAfterSeconds``.
        case serviceUnavailable = 6
        /// Too many requests: retry after ``CKError/retryAfterSeconds``.
        case requestRateLimited = 7
        /// CloudKit's missing entitlement; Nimbus never reports it (it has no entitlements).
        case missingEntitlement = 8
        /// No signed-in user, or the user's token was refused.
        case notAuthenticated = 9
        /// The user may not do this.
        case permissionFailure = 10
        /// The record, zone, subscription or share does not exist.
        case unknownItem = 11
        /// The request was malformed or a value was invalid.
        case invalidArguments = 12
        /// Deprecated by CloudKit; never reported.
        case resultsTruncated = 13
        /// The record changed on the server: the user info carries the server, client and
        /// ancestor records.
        case serverRecordChanged = 14
        /// The server refused the request for a reason the client does not know.
        case serverRejectedRequest = 15
        /// An asset's file does not exist or cannot be read.
        case assetFileNotFound = 16
        /// An asset's file changed while it was uploaded.
        case assetFileModified = 17
        /// The client is too old for the server.
        case incompatibleVersion = 18
        /// A unique field's value is already taken.
        case constraintViolation = 19
        /// The operation was cancelled.
        case operationCancelled = 20
        /// The change token is too old: fetch again without one.
        case changeTokenExpired = 21
        /// This item failed only because another item of the atomic batch did.
        case batchRequestFailed = 22
        /// The zone is busy: retry after ``CKError/retryAfterSeconds``.
        case zoneBusy = 23
        /// The operation does not apply to this database (for example, zones in the public database).
        case badDatabase = 24
        /// The user's storage quota is used up.
        case quotaExceeded = 25
        /// The zone does not exist.
        case zoneNotFound = 26
        /// The request carries too many items: split it.
        case limitExceeded = 27
        /// The user deleted the zone (from another device or the dashboard).
        case userDeletedZone = 28
        /// A share has too many participants.
        case tooManyParticipants = 29
        /// The record is already shared (by another share).
        case alreadyShared = 30
        /// A validated reference points at a record that does not exist.
        case referenceViolation = 31
        /// The account is restricted by its administrator.
        case managedAccountRestricted = 32
        /// The participant must verify before accepting the share.
        case participantMayNeedVerification = 33
        /// The server's response was lost: the change may or may not have been applied.
        case serverResponseLost = 34
        /// The asset's bytes are no longer available.
        case assetNotAvailable = 35
        /// The account is temporarily unavailable.
        case accountTemporarilyUnavailable = 36
        /// The user is already invited to this share.
        case participantAlreadyInvited = 37

        public var description: String { "\(Self.names[self] ?? "unknown")" }

        /// Each code's Swift name, which is also the Nimbus SDK's name for the same code.
        static let names: [Code: String] = [
            .internalError: "internalError", .partialFailure: "partialFailure",
            .networkUnavailable: "networkUnavailable", .networkFailure: "networkFailure",
            .badContainer: "badContainer", .serviceUnavailable: "serviceUnavailable",
            .requestRateLimited: "requestRateLimited", .missingEntitlement: "missingEntitlement",
            .notAuthenticated: "notAuthenticated", .permissionFailure: "permissionFailure",
            .unknownItem: "unknownItem", .invalidArguments: "invalidArguments",
            .resultsTruncated: "resultsTruncated", .serverRecordChanged: "serverRecordChanged",
            .serverRejectedRequest: "serverRejectedRequest", .assetFileNotFound: "assetFileNotFound",
            .assetFileModified: "assetFileModified", .incompatibleVersion: "incompatibleVersion",
            .constraintViolation: "constraintViolation", .operationCancelled: "operationCancelled",
            .changeTokenExpired: "changeTokenExpired", .batchRequestFailed: "batchRequestFailed",
            .zoneBusy: "zoneBusy", .badDatabase: "badDatabase", .quotaExceeded: "quotaExceeded",
            .zoneNotFound: "zoneNotFound", .limitExceeded: "limitExceeded", .userDeletedZone: "userDeletedZone",
            .tooManyParticipants: "tooManyParticipants", .alreadyShared: "alreadyShared",
            .referenceViolation: "referenceViolation", .managedAccountRestricted: "managedAccountRestricted",
            .participantMayNeedVerification: "participantMayNeedVerification",
            .serverResponseLost: "serverResponseLost", .assetNotAvailable: "assetNotAvailable",
            .accountTemporarilyUnavailable: "accountTemporarilyUnavailable",
            .participantAlreadyInvited: "participantAlreadyInvited",
        ]

        /// The code the Nimbus SDK names `name` (its codes carry CloudKit's names).
        init?(name: String) {
            guard let code = Self.names.first(where: { $0.value == name })?.key else { return nil }
            self = code
        }
    }
}

// MARK: - Matching a code in `catch` clauses

extension CKError {
    public static var internalError: Code { .internalError }
    public static var partialFailure: Code { .partialFailure }
    public static var networkUnavailable: Code { .networkUnavailable }
    public static var networkFailure: Code { .networkFailure }
    public static var badContainer: Code { .badContainer }
    public static var serviceUnavailable: Code { .serviceUnavailable }
    public static var requestRateLimited: Code { .requestRateLimited }
    public static var missingEntitlement: Code { .missingEntitlement }
    public static var notAuthenticated: Code { .notAuthenticated }
    public static var permissionFailure: Code { .permissionFailure }
    public static var unknownItem: Code { .unknownItem }
    public static var invalidArguments: Code { .invalidArguments }
    public static var resultsTruncated: Code { .resultsTruncated }
    public static var serverRecordChanged: Code { .serverRecordChanged }
    public static var serverRejectedRequest: Code { .serverRejectedRequest }
    public static var assetFileNotFound: Code { .assetFileNotFound }
    public static var assetFileModified: Code { .assetFileModified }
    public static var incompatibleVersion: Code { .incompatibleVersion }
    public static var constraintViolation: Code { .constraintViolation }
    public static var operationCancelled: Code { .operationCancelled }
    public static var changeTokenExpired: Code { .changeTokenExpired }
    public static var batchRequestFailed: Code { .batchRequestFailed }
    public static var zoneBusy: Code { .zoneBusy }
    public static var badDatabase: Code { .badDatabase }
    public static var quotaExceeded: Code { .quotaExceeded }
    public static var zoneNotFound: Code { .zoneNotFound }
    public static var limitExceeded: Code { .limitExceeded }
    public static var userDeletedZone: Code { .userDeletedZone }
    public static var tooManyParticipants: Code { .tooManyParticipants }
    public static var alreadyShared: Code { .alreadyShared }
    public static var referenceViolation: Code { .referenceViolation }
    public static var managedAccountRestricted: Code { .managedAccountRestricted }
    public static var participantMayNeedVerification: Code { .participantMayNeedVerification }
    public static var serverResponseLost: Code { .serverResponseLost }
    public static var assetNotAvailable: Code { .assetNotAvailable }
    public static var accountTemporarilyUnavailable: Code { .accountTemporarilyUnavailable }
    public static var participantAlreadyInvited: Code { .participantAlreadyInvited }
}

extension CKError.Code {
    /// Lets a `catch` clause match a code: `catch CKError.zoneNotFound { … }`.
    public static func ~= (code: CKError.Code, error: any Error) -> Bool {
        (error as? CKError)?.code == code
    }
}
