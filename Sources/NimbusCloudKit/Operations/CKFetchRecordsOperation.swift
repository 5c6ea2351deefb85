import Foundation
import Nimbus
import NimbusProtocol

/// Fetches records by ID: CloudKit's `CKFetchRecordsOperation`. ``perRecordResultBlock``
/// is called for each ID in order (a missing record fails with ``CKError/Code/unknownItem``),
/// then ``fetchRecordsResultBlock`` (``CKError/Code/partialFailure`` when some failed).
///
/// `@unchecked Sendable`: see ``CKOperation``.
open class CKFetchRecordsOperation: CKDatabaseOperation, @unchecked Sendable {
    @Protected public var recordIDs: [CKRecord.ID]? = nil
    @Protected public var desiredKeys: [CKRecord.FieldKey]? = nil
    /// Called with 1.0 as each record arrives (its assets included).
    @Protected public var perRecordProgressBlock: (@Sendable (CKRecord.ID, Double) -> Void)? = nil
    @Protected public var perRecordResultBlock: (@Sendable (CKRecord.ID, Result<CKRecord, any Error>) -> Void)? = nil
    @Protected public var fetchRecordsResultBlock: (@Sendable (Result<Void, any Error>) -> Void)? = nil
    /// The pre-iOS 15 final block: the fetched records by ID, and the error.
    @Protected public var fetchRecordsCompletionBlock: (@Sendable ([CKRecord.ID: CKRecord]?, (any Error)?) -> Void)? = nil

    private let fetched = Locked<[CKRecord.ID: CKRecord]>([:])
    /// Set by ``fetchCurrentUserRecordOperation()``: fetch the signed-in user's record.
    private let fetchesCurrentUser: Bool

    public override init() {
        self.fetchesCurrentUser = false
        super.init()
    }

    public convenience init(recordIDs: [CKRecord.ID]) {
        self.init()
        self.recordIDs = recordIDs
    }

    private init(currentUser: Bool) {
        self.fetchesCurrentUser = currentUser
        super.init()
    }

    /// An operation that fetches the signed-in user's record (from the public database).
    public static func fetchCurrentUserRecordOperation() -> CKFetchRecordsOperation {
        CKFetchRecordsOperation(currentUser: true)
    }

    override func execute() async {
        var ids = recordIDs ?? []
        let results: [CKRecord.ID: Result<CKRecord, any Error>]
        do {
            let database = targetDatabase
            if fetchesCurrentUser {
                let container = try database.configured().container
                let userID = CKRecord.ID(try await mappingErrors { try await container.userRecordID() })
                ids = [userID]
                results = try await container.publicCloudDatabase.ckDatabase.records(for: ids, desiredKeys: desiredKeys)
            } else {
                results = try await database.records(for: ids, desiredKeys: desiredKeys)
            }
        } catch {
            finishReporting(CKError.wrapping(error))
            return
        }
        var failures: [CKError.PartialItemID: CKError] = [:]
        let progress = perRecordProgressBlock
        let resultBlock = perRecordResultBlock
        let records = report(ids, results, key: { .record($0) }, into: &failures) { id, result in
            if case .success = result { progress?(id, 1) }
            resultBlock?(id, result)
        }
        fetched.withLock { $0 = Dictionary(records, uniquingKeysWith: { first, _ in first }) }
        finishReporting(failures.isEmpty ? cancellationError : CKError.partialFailure(failures))
    }

    override func reportFinal(_ error: CKError?) {
        fetchRecordsResultBlock?(error.map { .failure($0) } ?? .success(()))
        fetchRecordsCompletionBlock?(fetched.current, error)
    }
}

extension Database {
    /// The CloudKit database over this SDK database.
    var ckDatabase: CKDatabase {
        switch scope {
        case .public: return CKDatabase(self, scope: .public)
        case .private: return CKDatabase(self, scope: .private)
        case .shared: return CKDatabase(self, scope: .shared)
        }
    }
}
