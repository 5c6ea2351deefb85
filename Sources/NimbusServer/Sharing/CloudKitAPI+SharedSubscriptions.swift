import NimbusProtocol
import NimbusStore

extension CloudKitAPI {
    /// Makes the copies of `user`'s `shared` database subscriptions match the zones shared
    /// with them (``SharedSubscriptionCopy``): one zone subscription per subscription and
    /// shared zone, in the owner's database; copies in zones no longer shared are deleted.
    /// Run after the user's shared subscriptions change, and after a share of theirs is
    /// accepted, left or ended.
    ///
    /// - Parameter accepting: a share the user is about to accept: its zone gets copies
    ///   before the acceptance commits, so that the commit itself reaches their devices.
    func syncSharedSubscriptions(of user: String, _ identity: RequestIdentity, accepting: ShareLocation? = nil) async throws {
        let container = identity.container
        let environment = identity.environment
        let shared = DatabaseKey(container: container, environment: environment, scope: .shared, owner: user)
        let subscriptions = try await notifications.listSubscriptions(owner: user, in: shared).filter {
            $0.typeName == "database"
        }
        let locations = try await shareIndex.shares(of: user, container: container, environment: environment)
        var zones = try await sharedZones(of: user, container: container, environment: environment, locations: locations)
        if let accepting, !zones.contains(where: { $0.owner == accepting.owner && $0.zone == accepting.zone }) {
            var access = SharedZoneAccess(owner: accepting.owner, zone: accepting.zone)
            access.zoneWide = .readOnly
            zones.append(access)
        }
        var owners = Set(locations.map(\.owner))
        owners.formUnion(zones.map(\.owner))
        for owner in owners.sorted() {
            let database = DatabaseKey(container: container, environment: environment, scope: .private, owner: owner)
            var wanted: [String: SubscriptionDefinition] = [:]
            for zone in zones where zone.owner == owner {
                for subscription in subscriptions {
                    let id = SharedSubscriptionCopy.copyID(of: subscription.subscriptionID, zone: zone.zone)
                    wanted[id] = SubscriptionDefinition(
                        subscriptionID: id, kind: .zone(zoneName: zone.zone, recordType: nil),
                        notificationInfo: subscription.notificationInfo)
                }
            }
            let existing = try await notifications.listSubscriptions(owner: user, in: database)
            var operations: [SubscriptionOperation] = existing.compactMap { copy in
                wanted[copy.subscriptionID] == nil ? .delete(subscriptionID: copy.subscriptionID) : nil
            }
            let present = Set(existing.map(\.subscriptionID))
            operations += wanted.values.filter { !present.contains($0.subscriptionID) }.map { .save($0) }
            if !operations.isEmpty {
                _ = try await notifications.modifySubscriptions(operations, owner: user, in: database)
            }
        }
    }
}
