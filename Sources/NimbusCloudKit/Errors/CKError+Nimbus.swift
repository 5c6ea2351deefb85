import Foundation
import Nimbus
import NimbusProtocol

extension CKError {
    /// The CloudKit error for an SDK error: the same code (the SDK names its codes after
    /// CloudKit's), its message, and the user info keys CloudKit sets.
    init(_ error: NimbusError) {
        var partial: [PartialItemID: CKError] = [:]
        for (item, itemError) in error.partialErrorsByItemID {
            switch item {
            case .record(let id): partial[.record(CKRecord.ID(id))] = CKError(itemError)
            case .zone(let id): partial[.zone(CKRecordZone.ID(id))] = CKError(itemError)
            case .subscription(let id): partial[.subscription(id)] = CKError(itemError)
            }
        }
        self.init(
            Code(name: error.code.rawValue) ?? .serverRejectedRequest, message: error.message,
            retryAfterSeconds: error.retryAfterSeconds, partialErrors: partial,
            serverRecord: error.serverRecord.map { CKRecord.make($0) },
            clientRecord: error.clientRecord.map { CKRecord.make($0) },
            ancestorRecord: error.ancestorRecord.map { CKRecord.make($0) })
    }

    /// Any error as a CloudKit error: SDK errors mapped, cancellation as
    /// ``Code/operationCancelled``, anything else as ``Code/internalError``.
    static func wrapping(_ error: any Error) -> CKError {
        switch error {
        case let error as CKError: return error
        case let error as NimbusError: return CKError(error)
        case is CancellationError: return CKError(.operationCancelled, message: "the operation was cancelled")
        case let error as PredicateFormatError:
            return CKError(.invalidArguments, message: "the query's predicate is not one CloudKit supports: \(error)")
        default: return CKError(.internalError, message: "\(error)")
        }
    }

    /// A partial failure of several items, as CloudKit reports a batch with failed items.
    static func partialFailure(_ errors: [PartialItemID: CKError]) -> CKError {
        CKError(
            .partialFailure, message: "\(errors.count) item(s) failed; see CKPartialErrorsByItemIDKey",
            partialErrors: errors)
    }
}

/// Runs SDK work, reporting its failures as ``CKError``s.
func mappingErrors<T>(_ body: () async throws -> T) async throws(CKError) -> T {
    do {
        return try await body()
    } catch {
        throw CKError.wrapping(error)
    }
}
