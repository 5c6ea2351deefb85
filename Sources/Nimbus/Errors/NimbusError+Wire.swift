import Foundation
import NimbusProtocol

extension NimbusError.Code {
    /// The SDK code for a CloudKit Web Services `serverErrorCode`.
    ///
    /// - Parameters:
    ///   - serverErrorCode: the wire code.
    ///   - aboutZone: TRY_AGAIN_LATER that names a zone means the zone is busy.
    public init(serverErrorCode: ServerErrorCode, aboutZone: Bool = false) {
        switch serverErrorCode {
        case .accessDenied: self = .permissionFailure
        case .atomicError: self = .batchRequestFailed
        case .authenticationFailed, .authenticationRequired: self = .notAuthenticated
        case .badRequest: self = .invalidArguments
        case .conflict, .exists: self = .serverRecordChanged
        case .internalError: self = .internalError
        case .notFound: self = .unknownItem
        case .quotaExceeded: self = .quotaExceeded
        case .throttled: self = .requestRateLimited
        case .tryAgainLater: self = aboutZone ? .zoneBusy : .serviceUnavailable
        case .validatingReferenceError: self = .referenceViolation
        case .zoneNotFound: self = .zoneNotFound
        case .changeTokenExpired: self = .changeTokenExpired
        case .limitExceeded: self = .limitExceeded
        }
    }

    /// The SDK code for an HTTP status that came without a CloudKit error body.
    public init(httpStatus: Int) {
        switch httpStatus {
        case 400: self = .invalidArguments
        case 401, 421: self = .notAuthenticated
        case 403: self = .permissionFailure
        case 404: self = .unknownItem
        case 409: self = .serverRecordChanged
        case 410: self = .changeTokenExpired
        case 412: self = .referenceViolation
        case 413: self = .quotaExceeded
        case 429: self = .requestRateLimited
        case 500: self = .internalError
        case 502, 503, 504: self = .serviceUnavailable
        default: self = .serverRejectedRequest
        }
    }
}

extension NimbusError {
    /// Decodes an error dictionary (`{uuid, serverErrorCode, reason, retryAfter?, recordName?,
    /// zoneID?, serverRecord?}`), top-level or per-item. Returns `nil` when `json` is not one.
    ///
    /// - Parameters:
    ///   - zoneID: the zone the request was about; record IDs and the server record are
    ///     placed in it.
    ///   - clientRecord: for a failed save, the record the client sent (becomes
    ///     ``clientRecord`` and the source of ``ancestorRecord`` on a conflict).
    init?(wire json: JSON, httpStatus: Int? = nil, zoneID: ZoneID? = nil, clientRecord: Record? = nil) {
        guard let members = json.object, let rawCode = members["serverErrorCode"]?.string else { return nil }
        let wireZone = members["zoneID"].flatMap { try? ZoneID(wire: WireReader($0)) }
        let serverCode = ServerErrorCode(rawValue: rawCode)
        let code: Code =
            serverCode.map { Code(serverErrorCode: $0, aboutZone: wireZone != nil) } ?? .serverRejectedRequest
        let reason = members["reason"]?.string ?? rawCode
        let zone = zoneID ?? wireZone
        self.init(
            code, serverCode == nil ? "\(rawCode): \(reason)" : reason,
            retryAfterSeconds: members["retryAfter"]?.double,
            serverErrorCode: rawCode, httpStatus: httpStatus, requestUUID: members["uuid"]?.string,
            zoneID: zone)
        if let recordName = members["recordName"]?.string {
            recordID = Record.ID(recordName: recordName, zoneID: zone ?? .default)
        } else if let clientRecord {
            recordID = clientRecord.id
        }
        if code == .serverRecordChanged {
            self.clientRecord = clientRecord
            self.ancestorRecord = clientRecord?.ancestorRecord
            if let serverJSON = members["serverRecord"], let wire = try? NimbusProtocol.Record(wire: WireReader(serverJSON)) {
                var serverRecord = Record(wire: wire, zoneID: clientRecord?.id.zoneID ?? zone ?? .default)
                serverRecord.readSharingMembers(from: serverJSON)
                self.serverRecord = serverRecord
            }
        }
    }

    /// The error for a non-2xx HTTP response: the CloudKit error body when there is one,
    /// otherwise a code from the status alone.
    init(httpStatus: Int, body: Data, headers: [String: String], zoneID: ZoneID?) {
        let retryHeader = headers["retry-after"].flatMap(Double.init)
        if let json = try? JSON.parse(Array(body)), var error = NimbusError(wire: json, httpStatus: httpStatus, zoneID: zoneID) {
            if error.retryAfterSeconds == nil { error.retryAfterSeconds = retryHeader }
            self = error
            return
        }
        let text = String(decoding: body.prefix(300), as: UTF8.self)
        self.init(
            Code(httpStatus: httpStatus), "HTTP \(httpStatus)" + (text.isEmpty ? "" : ": \(text)"),
            retryAfterSeconds: retryHeader, httpStatus: httpStatus, zoneID: zoneID)
    }
}
