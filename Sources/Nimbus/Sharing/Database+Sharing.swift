import NimbusProtocol

extension Database {
    /// Saves a share together with the root record of the hierarchy it shares, in one atomic
    /// `records/modify` of the root's zone (CloudKit's rule: a share and its root are saved
    /// together). The root's ``Record/share`` is set to the share.
    ///
    /// ```swift
    /// var share = Share(rootRecord: album)
    /// share.addParticipant(.init(userRecordName: ann, permission: .readWrite))
    /// let (savedShare, savedAlbum) = try await container.privateCloudDatabase.save(share, rootRecord: album)
    /// ```
    ///
    /// - Returns: both as the server saved them (the share with its ``Share/url``).
    /// - Throws: the first failure of either (``NimbusError/Code/serverRecordChanged`` when
    ///   the root changed on the server since it was fetched).
    public func save(_ share: Share, rootRecord: Record) async throws -> (share: Share, rootRecord: Record) {
        var root = rootRecord
        root.share = Reference(recordName: share.id.recordName, action: .none)
        let results = try await modifyRecords(saving: [root, share.record], atomically: true)
        let rootResult = results.saveResults[root.id]
        let shareResult = results.saveResults[share.id]
        // The item that failed for its own reason, not only because the other one did.
        for case .failure(let error) in [rootResult, shareResult].compactMap({ $0 })
        where error.code != .batchRequestFailed {
            throw error
        }
        guard let savedRoot = try rootResult?.get(), let savedShareRecord = try shareResult?.get(),
            let savedShare = Share(savedShareRecord)
        else {
            throw NimbusError.malformedResponse("no result for the share or its root")
        }
        try await shareEncryptionKeys(savedShare, rootRecordID: savedRoot.id)
        return (savedShare, savedRoot)
    }

    /// Saves a zone-wide share, or changes to a share already saved (participants,
    /// permissions, title).
    ///
    /// ```swift
    /// var share = Share(zoneID: albumZone)
    /// share.addParticipant(.init(emailAddress: "ann@example.com", permission: .readOnly))
    /// share = try await container.privateCloudDatabase.save(share)
    /// ```
    public func save(_ share: Share) async throws -> Share {
        let saved = try await save(share.record)
        guard let savedShare = Share(saved) else {
            throw NimbusError.malformedResponse("the saved share came back as a \(saved.recordType)")
        }
        try await shareEncryptionKeys(savedShare, rootRecordID: nil)
        return savedShare
    }

    /// Gives the share's participants the zone's keys when this device holds encryption keys
    /// (``EncryptionKeys/shareKeys(for:rootRecordID:in:)``).
    private func shareEncryptionKeys(_ share: Share, rootRecordID: Record.ID?) async throws {
        guard scope == .private, let keys = container.encryption, try await keys.isReady(in: container) else { return }
        try await keys.shareKeys(for: share, rootRecordID: rootRecordID, in: self)
    }

    /// Fetches a share record (in the owner's private database, or the participant's shared
    /// database).
    ///
    /// ```swift
    /// let share = try await database.share(for: Record.ID(recordName: Share.zoneWideShareRecordName, zoneID: zone))
    /// ```
    /// - Throws: ``NimbusError/Code/unknownItem`` when there is none (or the record is not a
    ///   share).
    public func share(for shareID: Record.ID) async throws -> Share {
        let record = try await self.record(for: shareID)
        guard let share = Share(record) else {
            throw NimbusError(.unknownItem, "\(shareID) is a \(record.recordType), not a share")
        }
        return share
    }
}
