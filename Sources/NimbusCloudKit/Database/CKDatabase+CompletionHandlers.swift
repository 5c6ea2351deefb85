import Foundation

// CloudKit's completion-handler API: each method runs its async counterpart on a task and
// calls the handler once, from that task, with the result or the error.

extension CKDatabase {
    public func fetch(
        withRecordID recordID: CKRecord.ID, completionHandler: @escaping @Sendable (CKRecord?, (any Error)?) -> Void
    ) {
        Task { do { completionHandler(try await record(for: recordID), nil) } catch { completionHandler(nil, error) } }
    }

    public func fetch(
        withRecordIDs recordIDs: [CKRecord.ID], desiredKeys: [CKRecord.FieldKey]? = nil,
        completionHandler: @escaping @Sendable (Result<[CKRecord.ID: Result<CKRecord, any Error>], any Error>) -> Void
    ) {
        Task { completionHandler(await Result(awaiting: { try await records(for: recordIDs, desiredKeys: desiredKeys) })) }
    }

    public func save(_ record: CKRecord, completionHandler: @escaping @Sendable (CKRecord?, (any Error)?) -> Void) {
        Task { do { completionHandler(try await save(record), nil) } catch { completionHandler(nil, error) } }
    }

    public func delete(
        withRecordID recordID: CKRecord.ID, completionHandler: @escaping @Sendable (CKRecord.ID?, (any Error)?) -> Void
    ) {
        Task { do { completionHandler(try await deleteRecord(withID: recordID), nil) } catch { completionHandler(nil, error) } }
    }

    public func modifyRecords(
        saving recordsToSave: [CKRecord], deleting recordIDsToDelete: [CKRecord.ID],
        savePolicy: CKModifyRecordsOperation.RecordSavePolicy = .ifServerRecordUnchanged, atomically: Bool = true,
        completionHandler: @escaping @Sendable (
            Result<
                (saveResults: [CKRecord.ID: Result<CKRecord, any Error>], deleteResults: [CKRecord.ID: Result<Void, any Error>]),
                any Error
            >
        ) -> Void
    ) {
        Task {
            completionHandler(
                await Result(awaiting: {
                    try await modifyRecords(
                        saving: recordsToSave, deleting: recordIDsToDelete, savePolicy: savePolicy, atomically: atomically)
                }))
        }
    }

    /// The records matching a query (the first page; CloudKit's deprecated convenience).
    public func perform(
        _ query: CKQuery, inZoneWith zoneID: CKRecordZone.ID?,
        completionHandler: @escaping @Sendable ([CKRecord]?, (any Error)?) -> Void
    ) {
        Task {
            do {
                let (results, _) = try await records(matching: query, inZoneWith: zoneID)
                completionHandler(results.compactMap { try? $0.1.get() }, nil)
            } catch {
                completionHandler(nil, error)
            }
        }
    }

    public func fetch(
        withQuery query: CKQuery, inZoneWith zoneID: CKRecordZone.ID? = nil, desiredKeys: [CKRecord.FieldKey]? = nil,
        resultsLimit: Int = CKQueryOperation.maximumResults,
        completionHandler: @escaping @Sendable (
            Result<(matchResults: [(CKRecord.ID, Result<CKRecord, any Error>)], queryCursor: CKQueryOperation.Cursor?), any Error>
        ) -> Void
    ) {
        Task {
            completionHandler(
                await Result(awaiting: {
                    try await records(matching: query, inZoneWith: zoneID, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
                }))
        }
    }

    public func fetchAllRecordZones(completionHandler: @escaping @Sendable ([CKRecordZone]?, (any Error)?) -> Void) {
        Task { do { completionHandler(try await allRecordZones(), nil) } catch { completionHandler(nil, error) } }
    }

    public func fetch(
        withRecordZoneID zoneID: CKRecordZone.ID, completionHandler: @escaping @Sendable (CKRecordZone?, (any Error)?) -> Void
    ) {
        Task { do { completionHandler(try await recordZone(for: zoneID), nil) } catch { completionHandler(nil, error) } }
    }

    public func save(_ zone: CKRecordZone, completionHandler: @escaping @Sendable (CKRecordZone?, (any Error)?) -> Void) {
        Task { do { completionHandler(try await save(zone), nil) } catch { completionHandler(nil, error) } }
    }

    public func delete(
        withRecordZoneID zoneID: CKRecordZone.ID,
        completionHandler: @escaping @Sendable (CKRecordZone.ID?, (any Error)?) -> Void
    ) {
        Task { do { completionHandler(try await deleteRecordZone(withID: zoneID), nil) } catch { completionHandler(nil, error) } }
    }
}

extension Result where Failure == any Error {
    /// The result of async work.
    init(awaiting body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
