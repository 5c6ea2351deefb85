import NimbusProtocol

extension ZoneID {
    /// The separator of a shared zone's local name: U+001F, which no zone name or user record
    /// name may contain (names have no control characters), so the name splits back
    /// unambiguously.
    static let localNameSeparator: Character = "\u{1F}"

    /// The name the ``SyncEngine`` and its ``LocalStore`` give this zone (``LocalRecord/zoneName``,
    /// the outbox, ``SyncEvent``s).
    ///
    /// A zone of the private database is named by its zone name (the engine names private
    /// zones without an owner). A zone of the shared database is another user's: its name
    /// and its owner's record name joined by U+001F, so two owners' zones of the same name
    /// stay apart.
    ///
    /// ```swift
    /// let shared = ZoneID(zoneName: "Albums", ownerRecordName: "_a1")
    /// try engine.store.write { _, outbox in
    ///     try outbox.save(LocalRecord(zoneName: shared.localZoneName, recordName: "p1", recordType: "Photo", fields: …))
    /// }
    /// ```
    public var localZoneName: String {
        guard let ownerRecordName else { return zoneName }
        return zoneName + String(Self.localNameSeparator) + ownerRecordName
    }

    /// The zone a ``localZoneName`` names.
    public init(localZoneName: String) {
        let parts = localZoneName.split(separator: Self.localNameSeparator, maxSplits: 1, omittingEmptySubsequences: false)
        if parts.count == 2 {
            self.init(zoneName: String(parts[0]), ownerRecordName: String(parts[1]))
        } else {
            self.init(zoneName: localZoneName)
        }
    }

    /// Whether the engine reads this zone in the shared database (it has an owner).
    var isSharedZone: Bool { ownerRecordName != nil }
}

extension LocalRecord {
    /// The record's zone: a private zone (no owner) or a shared one (with its owner).
    public var zoneID: ZoneID { ZoneID(localZoneName: zoneName) }

    /// Whether the record is another user's, shared with this one (it lives in the shared
    /// database).
    public var isShared: Bool { zoneID.ownerRecordName != nil }
}
