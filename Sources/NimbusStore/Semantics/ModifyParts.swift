import Logging
import NimbusProtocol

/// A large non-atomic batch of saves, committed as several transactions of at most
/// ``WritePolicy/transactionRecordLimit`` records, in order: with one writer (SQLite), another
/// user's write waits for one part instead of the whole batch; on PostgreSQL, whose writers
/// do not wait on one another, the flood's backend works in shorter bursts, with the
/// background lane's own work (at the lowest CPU priority) between them.
///
/// Splitting changes nothing a client of a non-atomic request may rely on: each record
/// succeeds or fails on its own, and the answer still has one result per operation in
/// request order. Readers of the change feed may see the first part before the rest, as they
/// may see any two requests. Only batches whose outcome cannot depend on the split are split:
/// - not atomic (an atomic request is one transaction by definition);
/// - saves only: a delete cascades to `DELETE_SELF` children, and a child saved in an
///   earlier part would be in the database for the cascade to find;
/// - no record named twice (the planner rejects the repeat within one transaction; across
///   two it would not see it).
///
/// When a part after the first fails whole (the quota, the zone deleted meanwhile, a store
/// error), the parts before it stay committed and each record of the failing part and of
/// those after it fails on its own: QUOTA_EXCEEDED or ZONE_NOT_FOUND as the part's error,
/// TRY_AGAIN_LATER for an error of the store. Nothing is half-written: each part is one
/// transaction.
public enum ModifyParts {
    /// Commits `operations` with `transaction` (one transaction of the operations it is given),
    /// in parts when ``ranges(of:atomic:limit:)`` splits them, and answers as one request:
    /// after a part fails whole, the parts before stay committed and the rest fail record by
    /// record (``failedResults(of:error:)``); a first part's error is the request's.
    public static func commit(
        _ operations: [RecordOperation], atomic: Bool, limit: Int?,
        in transaction: ([RecordOperation]) async throws -> ModifyOutcome
    ) async throws -> ModifyOutcome {
        let parts = ranges(of: operations, atomic: atomic, limit: limit)
        guard parts.count > 1 else { return try await transaction(operations) }
        var outcomes: [ModifyOutcome] = []
        for (index, part) in parts.enumerated() {
            do {
                outcomes.append(try await transaction(Array(operations[part])))
            } catch where index > 0 {
                // The parts before stay committed; this one and the rest fail record by record.
                outcomes.append(ModifyOutcome(results: failedResults(of: operations[part.lowerBound...], error: error), commit: nil))
                break
            }
        }
        return merge(outcomes)
    }

    /// The ranges of `operations` to commit one after another: one range, the whole batch,
    /// unless the batch may be split and is larger than `limit`.
    public static func ranges(of operations: [RecordOperation], atomic: Bool, limit: Int?) -> [Range<Int>] {
        let whole = [operations.indices.startIndex..<operations.indices.endIndex]
        guard let limit, limit > 0, !atomic, operations.count > limit else { return whole }
        var names = Set<String>()
        names.reserveCapacity(operations.count)
        for operation in operations {
            guard !operation.type.isDelete, names.insert(operation.record.recordName).inserted else { return whole }
        }
        return stride(from: 0, to: operations.count, by: limit).map { $0..<min($0 + limit, operations.count) }
    }

    /// The results of a part that failed whole after earlier parts committed: each of its
    /// records, and of every part after it, fails with the part's error.
    public static func failedResults(of operations: ArraySlice<RecordOperation>, error: any Error) -> [RecordResult] {
        let failure: CloudKitError
        switch error {
        case let error as CloudKitError where error.code == .quotaExceeded || error.code == .zoneNotFound:
            failure = error
        default:
            // The store's own error stays in the server's log, as the HTTP layer keeps an
            // unexpected error out of its answers.
            StoredRecord.logger.error(
                "a batch committed in parts failed after its first part; \(operations.count) records answered TRY_AGAIN_LATER: \(error)")
            failure = CloudKitError(
                .tryAgainLater, "the server committed this batch in parts and could not write this part; send these records again",
                retryAfter: 1)
        }
        return operations.map { operation in
            var error = failure
            error.recordName = operation.record.recordName
            return .failed(error)
        }
    }

    /// One outcome for the whole request: the parts' results in order, and their commits as
    /// one (every change and notification, the last part's version).
    public static func merge(_ outcomes: [ModifyOutcome]) -> ModifyOutcome {
        var results: [RecordResult] = []
        var commit: CommitSummary?
        for outcome in outcomes {
            results += outcome.results
            guard let part = outcome.commit else { continue }
            if var merged = commit {
                merged.version = part.version
                merged.changes += part.changes
                merged.notifications += part.notifications
                commit = merged
            } else {
                commit = part
            }
        }
        return ModifyOutcome(results: results, commit: commit)
    }
}
