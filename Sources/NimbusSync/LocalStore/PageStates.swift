/// The local states of one fetched page's records, inside the transaction that applies the
/// page: the server copies of all the page's names are read with one query up front rather
/// than one query per record.
///
/// A name met a second time in the page is read again from the store, since applying its
/// first occurrence may have changed it: each state is what a per-record read would see.
struct PageStates {
    private let transaction: StoreTransaction
    private let zone: String
    private let noPending: Bool
    private let copies: [String: ServerCopy]
    private var met: Set<String> = []

    /// Reads the copies of `names`; `noPending` when the zone has no pending change.
    init(_ transaction: StoreTransaction, zone: String, names: [String], noPending: Bool) throws {
        self.transaction = transaction
        self.zone = zone
        self.noPending = noPending
        copies = try transaction.serverCopies(zone: zone, names: names)
        met.reserveCapacity(names.count)
    }

    /// The state of `name` as the transaction sees it now.
    mutating func state(of name: String) throws -> LocalState {
        guard met.insert(name).inserted else {
            return try transaction.localState(zone: zone, name: name, noPending: noPending)
        }
        return try transaction.localState(zone: zone, name: name, copy: copies[name], noPending: noPending)
    }
}
