/// The first element of `stream`, or `nil` after `timeout`: awaiting an event, never sleeping
/// for one.
func first<T: Sendable>(_ stream: AsyncStream<T>, timeout: Duration = .seconds(60)) async throws -> T? {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            for await element in stream { return element }
            return nil
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        let result = try await group.next() ?? nil
        group.cancelAll()
        return result
    }
}
