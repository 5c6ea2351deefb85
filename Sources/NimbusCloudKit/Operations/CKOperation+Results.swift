extension CKOperation {
    /// Hands each item's result to `block` in the items' order, collecting the failures under
    /// their partial-error keys (an item the answer left out failed internally).
    /// - Returns: the successful items with their values, in order.
    func report<ID: Hashable, Value>(
        _ ids: [ID], _ results: [ID: Result<Value, any Error>], key: (ID) -> CKError.PartialItemID,
        into failures: inout [CKError.PartialItemID: CKError], to block: ((ID, Result<Value, any Error>) -> Void)?
    ) -> [(ID, Value)] {
        var successes: [(ID, Value)] = []
        for id in ids {
            let result = results[id] ?? .failure(CKError(.internalError, message: "the server returned no result for \(id)"))
            switch result {
            case .success(let value): successes.append((id, value))
            case .failure(let error): failures[key(id)] = CKError.wrapping(error)
            }
            block?(id, result)
        }
        return successes
    }
}
