import NimbusProtocol

extension Subscription {
    /// The shared wire model of this subscription.
    var definition: SubscriptionDefinition {
        let kind: SubscriptionDefinition.Kind
        switch self.kind {
        case .query(let query, let zoneID, let firesOn, let firesOnce):
            kind = .query(
                query, scope: zoneID.map { .zone($0.zoneName) } ?? .allZones, firesOn: firesOn, firesOnce: firesOnce)
        case .recordZone(let zoneID, let recordType):
            kind = .zone(zoneName: zoneID.zoneName, recordType: recordType)
        case .database:
            kind = .database
        }
        return SubscriptionDefinition(subscriptionID: id, kind: kind, notificationInfo: notificationInfo)
    }

    /// The subscription dictionary of `subscriptions/modify`.
    var wireJSON: JSON { definition.wireJSON(zoneOwner: nil) }

    /// Decodes a subscription dictionary.
    init(wire json: JSON) throws(NimbusError) {
        let definition: SubscriptionDefinition
        let owner = json["zoneID"]?["ownerRecordName"]?.string
        do throws(CloudKitError) {
            definition = try SubscriptionDefinition(wire: WireReader(json))
        } catch {
            throw NimbusError.malformedResponse(error.reason)
        }
        let kind: Kind
        switch definition.kind {
        case .query(let query, let scope, let firesOn, let firesOnce):
            let zoneID: ZoneID? =
                switch scope {
                case .zone(let name): ZoneID(zoneName: name, ownerRecordName: owner)
                case .allZones: nil
                }
            kind = .query(query, zoneID: zoneID, firesOn: firesOn, firesOnce: firesOnce)
        case .zone(let name, let recordType):
            kind = .recordZone(ZoneID(zoneName: name, ownerRecordName: owner), recordType: recordType)
        case .database:
            kind = .database
        }
        self.init(id: definition.subscriptionID, kind: kind, notificationInfo: definition.notificationInfo)
    }
}
