import Foundation

extension CKOperation {
    /// The container an operation without a database works with: its configuration's, else
    /// `CKContainer.default()`, as in CloudKit.
    var targetContainer: CKContainer { configuration?.container ?? CKContainer.default() }

    /// Fetches with one request, then (unless cancelled meanwhile) hands over what came back,
    /// then ends the operation: with the request's error, or cancellation, or success.
    func fetchThenDeliver<Value>(_ fetch: () async throws -> Value, deliver: (Value) -> Void) async {
        do {
            let value = try await fetch()
            if let cancelled = cancellationError { return finishReporting(cancelled) }
            deliver(value)
            finishReporting(cancellationError)
        } catch {
            finishReporting(CKError.wrapping(error))
        }
    }

    /// Works through `items` in order, reporting each item's result, and ends the operation:
    /// cancelled, ``CKError/Code/partialFailure`` when some failed (`failed` says what), or
    /// success.
    func forEachItem<Item, Value>(
        _ items: [Item], failed: (Int) -> String, _ work: (Item) async throws -> Value,
        report: (Item, Result<Value, any Error>) -> Void
    ) async {
        var failures = 0
        for item in items {
            if let cancelled = cancellationError { return finishReporting(cancelled) }
            do {
                report(item, .success(try await work(item)))
            } catch {
                failures += 1
                report(item, .failure(CKError.wrapping(error)))
            }
        }
        finishReporting(cancellationError ?? (failures == 0 ? nil : CKError(.partialFailure, message: failed(failures))))
    }

    /// Calls an operation's final blocks: the result block, then the deprecated completion block.
    func reportFinal(
        _ error: CKError?, result: (@Sendable (Result<Void, any Error>) -> Void)?,
        completion: (@Sendable ((any Error)?) -> Void)? = nil
    ) {
        result?(error.map { .failure($0) } ?? .success(()))
        completion?(error)
    }
}
