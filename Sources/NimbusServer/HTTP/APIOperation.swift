/// Every operation the CloudKit Web Services API serves, by its path after
/// `/database/1/{container}/{environment}/{database}/`.
///
/// This table is the single list of routes: the router dispatches on it and a test checks
/// that `openapi.yaml` documents each entry.
public enum APIOperation: String, CaseIterable, Sendable {
    case recordsModify = "records/modify"
    case recordsLookup = "records/lookup"
    case recordsChanges = "records/changes"
    case zonesList = "zones/list"
    case zonesLookup = "zones/lookup"
    case zonesModify = "zones/modify"
    case zonesChanges = "zones/changes"
    case changesDatabase = "changes/database"
    case changesZone = "changes/zone"
    case usersCurrent = "users/current"
    case usersCaller = "users/caller"

    /// The HTTP methods the operation answers.
    public var methods: [String] {
        switch self {
        case .zonesList, .usersCurrent: return ["GET", "POST"]
        case .usersCaller: return ["GET", "POST"]
        default: return ["POST"]
        }
    }

    /// Whether the operation changes data (and so needs a user or an admin key in the public database).
    var isWrite: Bool {
        self == .recordsModify || self == .zonesModify
    }
}
