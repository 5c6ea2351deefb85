import NimbusProtocol

extension Subscription {
    /// The subscription dictionary of `subscriptions/modify`.
    var wireJSON: JSON {
        var members: [String: JSON] = ["subscriptionID": .string(id)]
        switch kind {
        case .query(let query, let zoneID, let firesOn, let firesOnce):
            members["subscriptionType"] = "query"
            members["query"] = query.wireJSON
            if let zoneID { members["zoneID"] = zoneID.wireJSON } else { members["zoneWide"] = true }
            members["firesOn"] = .array(QueryEvent.allCases.filter(firesOn.contains).map { .string($0.rawValue) })
            members["firesOnce"] = .bool(firesOnce)
        case .recordZone(let zoneID):
            members["subscriptionType"] = "zone"
            members["zoneID"] = zoneID.wireJSON
        case .database:
            members["subscriptionType"] = "database"
        }
        if let info = notificationInfo { members["notificationInfo"] = info.wireJSON }
        return .object(members)
    }

    /// Decodes a subscription dictionary.
    init(wire json: JSON) throws {
        let reader = WireReader(json)
        do {
            let id = try reader.required("subscriptionID").string()
            let type = try reader.required("subscriptionType").string()
            let kind: Kind
            switch type {
            case "query":
                var firesOn = Set<QueryEvent>()
                for name in try reader.optionalStringArray("firesOn") ?? [] {
                    if let event = QueryEvent(rawValue: name) { firesOn.insert(event) }
                }
                let zoneWide = try reader.optionalBool("zoneWide") ?? false
                kind = .query(
                    try Query(wire: reader.required("query")),
                    zoneID: zoneWide ? nil : try reader.optional("zoneID").map { r throws(CloudKitError) in try ZoneID(wire: r) },
                    firesOn: firesOn, firesOnce: try reader.optionalBool("firesOnce") ?? false)
            case "zone":
                kind = .recordZone(try ZoneID(wire: reader.required("zoneID")))
            case "database":
                kind = .database
            default:
                throw NimbusError.malformedResponse("unknown subscription type '\(type)'")
            }
            let info = try reader.optional("notificationInfo").map { r throws(CloudKitError) in
                try NotificationInfo(wire: r)
            }
            self.init(id: id, kind: kind, notificationInfo: info)
        } catch let error as CloudKitError {
            throw NimbusError.malformedResponse(error.reason)
        }
    }
}

extension Subscription.NotificationInfo {
    var wireJSON: JSON {
        var members: [String: JSON] = [
            "shouldBadge": .bool(shouldBadge), "shouldSendContentAvailable": .bool(shouldSendContentAvailable),
        ]
        if let alertBody { members["alertBody"] = .string(alertBody) }
        if let alertLocalizationKey { members["alertLocalizationKey"] = .string(alertLocalizationKey) }
        if let alertLocalizationArgs { members["alertLocalizationArgs"] = .array(alertLocalizationArgs.map(JSON.string)) }
        if let title { members["title"] = .string(title) }
        if let subtitle { members["subtitle"] = .string(subtitle) }
        if let soundName { members["soundName"] = .string(soundName) }
        if let desiredKeys { members["desiredKeys"] = .array(desiredKeys.map(JSON.string)) }
        if let category { members["category"] = .string(category) }
        return .object(members)
    }

    init(wire reader: WireReader) throws(CloudKitError) {
        self.init(
            alertBody: try reader.optionalString("alertBody"),
            alertLocalizationKey: try reader.optionalString("alertLocalizationKey"),
            alertLocalizationArgs: try reader.optionalStringArray("alertLocalizationArgs"),
            title: try reader.optionalString("title"),
            subtitle: try reader.optionalString("subtitle"),
            soundName: try reader.optionalString("soundName"),
            shouldBadge: try reader.optionalBool("shouldBadge") ?? false,
            shouldSendContentAvailable: try reader.optionalBool("shouldSendContentAvailable") ?? false,
            desiredKeys: try reader.optionalStringArray("desiredKeys"),
            category: try reader.optionalString("category"))
    }
}
