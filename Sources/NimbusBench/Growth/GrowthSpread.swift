import NimbusProtocol
import NimbusStore

/// How `nimbus-bench growth` spreads its records: all in one zone, over 100 zones of one
/// user, or over 10,000 users with a zone each. The probes always read and write the first
/// zone of the first user (the signed-in bench user), which also holds 2,000 records of its
/// own, so that every change-feed page and query page is full whatever the spread.
enum GrowthSpread: String, CaseIterable, Sendable {
    case oneZone = "zone"
    case hundredZones = "zones"
    case users

    var title: String {
        switch self {
        case .oneZone: "one zone"
        case .hundredZones: "100 zones"
        case .users: "10,000 users"
        }
    }

    /// How many zones the records are spread over.
    var targets: Int {
        switch self {
        case .oneZone: 1
        case .hundredZones: 100
        case .users: 10_000
        }
    }

    /// The zone every target writes to: each of its own (100 zones), or `g0` of each user.
    func zoneName(_ target: Int) -> String { self == .hundredZones ? "g\(target)" : "g0" }

    /// The owner of target `index`'s private database: the bench user, or a user of its own.
    func owner(_ target: Int, probeUser: String) -> String {
        self == .users && target > 0 ? "_growth_user_\(target)" : probeUser
    }
}

/// One zone the bench writes records into: the next record index to create and the next to
/// delete (records are named `b<index>`).
struct GrowthTarget: Sendable {
    var database: DatabaseKey
    var zone: String
    var caller: Caller
    var next = 0
    var nextToDelete = 0
}
