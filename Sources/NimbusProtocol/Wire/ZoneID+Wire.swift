extension ZoneID {
    /// Decodes `{zoneName, ownerRecordName | ownerName}`.
    package init(wire reader: WireReader) throws(CloudKitError) {
        let zoneName = try reader.required("zoneName").string()
        guard !zoneName.isEmpty else { throw .badRequest("'\(reader.path).zoneName' must not be empty") }
        var owner = try reader.optionalString("ownerRecordName")
        if owner == nil { owner = try reader.optionalString("ownerName") }
        self.init(zoneName: zoneName, ownerRecordName: owner)
    }

    /// `{zoneName, ownerRecordName}`.
    package var wireJSON: JSON {
        var members: [String: JSON] = ["zoneName": .string(zoneName)]
        if let ownerRecordName { members["ownerRecordName"] = .string(ownerRecordName) }
        return .object(members)
    }
}
