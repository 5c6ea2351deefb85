import NimbusProtocol

extension Reference {
    /// A reference to a record. The zone is left out of the wire form when it is the
    /// referring record's zone, as CloudKit requires references to stay within a zone.
    public init(recordID: Record.ID, action: Action = .none) {
        self.init(recordName: recordID.recordName, zoneID: recordID.zoneID.isDefault ? nil : recordID.zoneID, action: action)
    }

    /// A reference to a record.
    public init(record: Record, action: Action = .none) {
        self.init(recordID: record.id, action: action)
    }

    /// The referenced record's ID; a reference without a zone points into the default zone
    /// unless read relative to the referring record (``recordID(relativeTo:)``).
    public var recordID: Record.ID {
        Record.ID(recordName: recordName, zoneID: zoneID ?? .default)
    }

    /// The referenced record's ID, taking a missing zone to mean the referring record's zone.
    public func recordID(relativeTo record: Record.ID) -> Record.ID {
        Record.ID(recordName: recordName, zoneID: zoneID ?? record.zoneID)
    }
}
