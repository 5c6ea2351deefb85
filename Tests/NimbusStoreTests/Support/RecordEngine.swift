import NimbusMemory
import NimbusStore
import Testing

/// The engines that hold records: the in-memory one (the storage core's rules with no SQL
/// and no I/O) and the real ones. A test of the record store's behaviour (``RecordStore``:
/// modify, feeds, zones) runs on all three, so the rules are the core's, not an engine's.
enum RecordEngine: Sendable, CustomTestStringConvertible {
    case memory
    case store(StoreEngine)

    /// The in-memory engine and the real engines this run can reach.
    static var available: [RecordEngine] { [.memory] + StoreEngine.available.map(RecordEngine.store) }

    var testDescription: String {
        switch self {
        case .memory: return "memory"
        case .store(let engine): return engine.testDescription
        }
    }

    /// Opens a fresh, empty record store of this engine whose clock is `clock`, runs `body`
    /// with it, then closes it, also when `body` throws.
    func withStore<T>(clock: WallClock = .system, _ body: (any RecordStore) async throws -> T) async throws -> T {
        switch self {
        case .memory: return try await body(MemoryRecordStore(clock: clock))
        case .store(let engine): return try await engine.withStore(clock: clock) { try await body($0) }
        }
    }
}
