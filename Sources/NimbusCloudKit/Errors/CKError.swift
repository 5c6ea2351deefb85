import Foundation

/// A CloudKit error: a ``Code``, a description that says what happened, and the user info
/// CloudKit sets (``CKPartialErrorsByItemIDKey`` on ``Code/partialFailure``, the three
/// records on ``Code/serverRecordChanged``, ``CKErrorRetryAfterKey`` on throttling and busy
/// errors). Every error NimbusCloudKit reports is a `CKError`.
///
/// ```swift
/// do {
///     try await database.save(record)
/// } catch let error as CKError where error.code == .serverRecordChanged {
///     let server = error.serverRecord!   // merge and save again
/// } catch CKError.zoneNotFound {
///     try await database.save(CKRecordZone(zoneName: "Notes"))
/// }
/// ```
///
/// As an `NSError` it has domain ``CKErrorDomain``, CloudKit's integer code and the same
/// user info.
public struct CKError: Error, CustomNSError, LocalizedError, Hashable, Sendable {
    /// What went wrong.
    public let code: Code
    /// What happened, in words.
    let message: String
    /// ``CKErrorRetryAfterKey``.
    public let retryAfterSeconds: Double?
    /// ``CKPartialErrorsByItemIDKey``, keyed by typed IDs.
    let partialErrors: [PartialItemID: CKError]
    /// The three records of ``Code/serverRecordChanged``.
    public let serverRecord: CKRecord?
    public let clientRecord: CKRecord?
    public let ancestorRecord: CKRecord?
    /// ``CKErrorUserDidResetEncryptedDataKey``.
    let userDidResetEncryptedData: Bool

    init(
        _ code: Code, message: String, retryAfterSeconds: Double? = nil,
        partialErrors: [PartialItemID: CKError] = [:], serverRecord: CKRecord? = nil, clientRecord: CKRecord? = nil,
        ancestorRecord: CKRecord? = nil, userDidResetEncryptedData: Bool = false
    ) {
        self.code = code
        self.userDidResetEncryptedData = userDidResetEncryptedData
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
        self.partialErrors = partialErrors
        self.serverRecord = serverRecord
        self.clientRecord = clientRecord
        self.ancestorRecord = ancestorRecord
    }

    /// An error with CloudKit's user info keys: `NSLocalizedDescriptionKey`,
    /// ``CKErrorRetryAfterKey``, ``CKPartialErrorsByItemIDKey`` and the three
    /// `CKRecordChangedError…Key`s and ``CKErrorUserDidResetEncryptedDataKey`` are read; other
    /// keys are not kept.
    public init(_ code: Code, userInfo: [String: Any] = [:]) {
        var partial: [PartialItemID: CKError] = [:]
        for (key, value) in userInfo[CKPartialErrorsByItemIDKey] as? [AnyHashable: any Error] ?? [:] {
            guard let id = PartialItemID(key.base), let error = value as? CKError else { continue }
            partial[id] = error
        }
        let retry = (userInfo[CKErrorRetryAfterKey] as? NSNumber)?.doubleValue ?? userInfo[CKErrorRetryAfterKey] as? Double
        self.init(
            code, message: userInfo[NSLocalizedDescriptionKey] as? String ?? "CloudKit error \(code)",
            retryAfterSeconds: retry, partialErrors: partial,
            serverRecord: userInfo[CKRecordChangedErrorServerRecordKey] as? CKRecord,
            clientRecord: userInfo[CKRecordChangedErrorClientRecordKey] as? CKRecord,
            ancestorRecord: userInfo[CKRecordChangedErrorAncestorRecordKey] as? CKRecord,
            userDidResetEncryptedData: (userInfo[CKErrorUserDidResetEncryptedDataKey] as? NSNumber)?.boolValue
                ?? userInfo[CKErrorUserDidResetEncryptedDataKey] as? Bool ?? false)
    }

    /// For ``Code/partialFailure``: each failed item's error, keyed by its `CKRecord.ID`,
    /// `CKRecordZone.ID` or subscription ID (a `String`).
    public var partialErrorsByItemID: [AnyHashable: any Error]? {
        guard !partialErrors.isEmpty else { return nil }
        var result: [AnyHashable: any Error] = [:]
        for (id, error) in partialErrors { result[id.key] = error }
        return result
    }

    /// The user info CloudKit sets for this error.
    public var userInfo: [String: Any] {
        var info: [String: Any] = [NSLocalizedDescriptionKey: message]
        if let retryAfterSeconds { info[CKErrorRetryAfterKey] = NSNumber(value: retryAfterSeconds) }
        if let partial = partialErrorsByItemID { info[CKPartialErrorsByItemIDKey] = partial }
        if let serverRecord { info[CKRecordChangedErrorServerRecordKey] = serverRecord }
        if let clientRecord { info[CKRecordChangedErrorClientRecordKey] = clientRecord }
        if let ancestorRecord { info[CKRecordChangedErrorAncestorRecordKey] = ancestorRecord }
        if userDidResetEncryptedData { info[CKErrorUserDidResetEncryptedDataKey] = NSNumber(value: true) }
        return info
    }

    /// This error with ``CKErrorUserDidResetEncryptedDataKey`` set.
    var markedAsEncryptedDataReset: CKError {
        CKError(
            code, message: message, retryAfterSeconds: retryAfterSeconds, partialErrors: partialErrors,
            serverRecord: serverRecord, clientRecord: clientRecord, ancestorRecord: ancestorRecord,
            userDidResetEncryptedData: true)
    }

    public static var errorDomain: String { CKErrorDomain }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] { userInfo }
    public var errorDescription: String? { message }

    public static func == (lhs: CKError, rhs: CKError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.retryAfterSeconds == rhs.retryAfterSeconds
            && lhs.partialErrors == rhs.partialErrors
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
    }
}

extension CKError {
    /// The ID a partial error is keyed by.
    enum PartialItemID: Hashable, Sendable {
        case record(CKRecord.ID)
        case zone(CKRecordZone.ID)
        case subscription(String)

        init?(_ key: Any) {
            switch key {
            case let id as CKRecord.ID: self = .record(id)
            case let id as CKRecordZone.ID: self = .zone(id)
            case let id as String: self = .subscription(id)
            default: return nil
            }
        }

        var key: AnyHashable {
            switch self {
            case .record(let id): return id
            case .zone(let id): return id
            case .subscription(let id): return id
            }
        }
    }
}
