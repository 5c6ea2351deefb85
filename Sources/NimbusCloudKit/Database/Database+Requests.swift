import Nimbus
import NimbusProtocol

extension Database {
    /// Results of a modify, keyed by the records' IDs.
    typealias ModifyResults = (
        saveResults: [Record.ID: Result<Record, NimbusError>], deleteResults: [Record.ID: Result<Void, NimbusError>]
    )

    /// `modifyRecords` in requests the server takes, so that the app never sees its limit.
    ///
    /// A non-atomic modify of more than ``ProtocolLimits/maxRecordOperations`` items goes in
    /// slices of at most that many (each slice one request per zone); a slice that fails as a
    /// whole fails each of its items, keeping the other slices' results. An atomic modify goes
    /// whole, one request per zone, since a zone's changes must succeed or fail together:
    /// more than the limit in one zone is ``CKError/Code/limitExceeded``, as in CloudKit.
    func modifyRecordsInRequests(
        saving recordsToSave: [Record], deleting recordIDsToDelete: [Record.ID], savePolicy: SavePolicy,
        atomically: Bool, assetProgress: (@Sendable (Record.ID, String, TransferProgress) -> Void)? = nil
    ) async throws -> ModifyResults {
        let limit = ProtocolLimits.maxRecordOperations
        guard !atomically, recordsToSave.count + recordIDsToDelete.count > limit else {
            return try await modifyRecords(
                saving: recordsToSave, deleting: recordIDsToDelete, savePolicy: savePolicy, atomically: atomically,
                assetProgress: assetProgress)
        }
        var results: ModifyResults = ([:], [:])
        var saves = recordsToSave[...]
        var deletes = recordIDsToDelete[...]
        while !saves.isEmpty || !deletes.isEmpty {
            let sliceSaves = Array(saves.prefix(limit))
            saves = saves.dropFirst(sliceSaves.count)
            let sliceDeletes = Array(deletes.prefix(limit - sliceSaves.count))
            deletes = deletes.dropFirst(sliceDeletes.count)
            do {
                let slice = try await modifyRecords(
                    saving: sliceSaves, deleting: sliceDeletes, savePolicy: savePolicy, atomically: false,
                    assetProgress: assetProgress)
                results.saveResults.merge(slice.saveResults) { _, new in new }
                results.deleteResults.merge(slice.deleteResults) { _, new in new }
            } catch let error as NimbusError where error.code != .operationCancelled {
                func about(_ id: Record.ID) -> NimbusError {
                    var attributed = error
                    attributed.recordID = id
                    return attributed
                }
                for record in sliceSaves { results.saveResults[record.id] = .failure(about(record.id)) }
                for id in sliceDeletes { results.deleteResults[id] = .failure(about(id)) }
            }
        }
        return results
    }
}
