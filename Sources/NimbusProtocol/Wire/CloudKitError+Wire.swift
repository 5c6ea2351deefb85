extension CloudKitError {
    /// The error dictionary: `{uuid, serverErrorCode, reason, recordName?, zoneID?, retryAfter?,
    /// serverRecord?}`.
    package func wireJSON(uuid: String, numbersAsStrings: Bool = false) -> JSON {
        var members: [String: JSON] = [
            "uuid": .string(uuid),
            "serverErrorCode": .string(code.rawValue),
            "reason": .string(reason),
        ]
        if let recordName { members["recordName"] = .string(recordName) }
        if let zoneID { members["zoneID"] = zoneID.wireJSON }
        if let retryAfter { members["retryAfter"] = .int(retryAfter) }
        if let redirectURL { members["redirectURL"] = .string(redirectURL) }
        if let serverRecord { members["serverRecord"] = serverRecord.wireJSON(numbersAsStrings: numbersAsStrings) }
        return .object(members)
    }

    /// Decodes an error dictionary (in a response body or inside `records[]`/`zones[]`).
    /// Returns `nil` when the dictionary carries no `serverErrorCode`.
    package init?(wire json: JSON) {
        guard let members = json.object, let codeText = members["serverErrorCode"]?.string else { return nil }
        let code = ServerErrorCode(rawValue: codeText) ?? .internalError
        var reason = members["reason"]?.string ?? codeText
        if ServerErrorCode(rawValue: codeText) == nil { reason = "\(codeText): \(reason)" }
        let zoneID = members["zoneID"].flatMap { try? ZoneID(wire: WireReader($0)) }
        let serverRecord = members["serverRecord"].flatMap { try? Record(wire: WireReader($0)) }
        self.init(
            code, reason, recordName: members["recordName"]?.string, zoneID: zoneID,
            retryAfter: members["retryAfter"]?.int64.map { Int($0) }, serverRecord: serverRecord)
        self.redirectURL = members["redirectURL"]?.string
    }
}
