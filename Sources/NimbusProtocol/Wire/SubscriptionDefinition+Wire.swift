extension SubscriptionDefinition {
    /// Decodes a subscription dictionary, checking it as CloudKit does: a zone subscription
    /// names its zone and has no `desiredKeys`; a query subscription has a query with a
    /// record type and at least one `firesOn` event.
    package init(wire reader: WireReader) throws(CloudKitError) {
        _ = try reader.object()
        let subscriptionID = try reader.required("subscriptionID").string()
        guard !subscriptionID.isEmpty, subscriptionID.utf8.count <= 255 else {
            throw .badRequest("'\(reader.path).subscriptionID' must be 1 to 255 bytes")
        }
        let typeName = try reader.required("subscriptionType").string()
        let info = try reader.optional("notificationInfo").map { r throws(CloudKitError) in
            try NotificationInfo(wire: r)
        } ?? NotificationInfo()
        let zoneName = try reader.optional("zoneID").map { r throws(CloudKitError) in try ZoneID(wire: r).zoneName }
        let kind: Kind
        switch typeName {
        case "query":
            let query = try RecordQuery(wire: reader.required("query"))
            var firesOn = Set<FiringEvent>()
            if let names = try reader.optionalStringArray("firesOn") {
                for (index, name) in names.enumerated() {
                    guard let event = FiringEvent(rawValue: name) else {
                        throw .badRequest(
                            "'\(reader.path).firesOn[\(index)]': unknown event '\(name)'; expected create, update or delete")
                    }
                    firesOn.insert(event)
                }
                guard !firesOn.isEmpty else {
                    throw .badRequest("'\(reader.path).firesOn' must name at least one of create, update, delete")
                }
            } else {
                firesOn = Set(FiringEvent.allCases)
            }
            let zoneWide = try reader.optionalBool("zoneWide") ?? false
            let scope: QueryScope = zoneName.map { .zone($0) } ?? (zoneWide ? .allZones : .zone(ZoneID.defaultZoneName))
            kind = .query(query, scope: scope, firesOn: firesOn, firesOnce: try reader.optionalBool("firesOnce") ?? false)
        case "zone", "recordZone":
            guard let zoneName else {
                throw .badRequest("'\(reader.path).zoneID' is required: a zone subscription watches one zone")
            }
            try Self.rejectQueryKeys(reader, info: info, kind: "zone")
            kind = .zone(zoneName: zoneName, recordType: try reader.optionalString("recordType"))
        case "database":
            try Self.rejectQueryKeys(reader, info: info, kind: "database")
            kind = .database
        default:
            throw .badRequest(
                "'\(reader.path).subscriptionType': unknown type '\(typeName)'; expected query, zone or database")
        }
        self.init(subscriptionID: subscriptionID, kind: kind, notificationInfo: info)
    }

    private static func rejectQueryKeys(_ reader: WireReader, info: NotificationInfo, kind: String)
        throws(CloudKitError)
    {
        if info.desiredKeys != nil {
            throw .badRequest(
                "'\(reader.path).notificationInfo.desiredKeys': desiredKeys are only allowed on query subscriptions; "
                    + "a \(kind) subscription's notification carries no record fields (CloudKit rejects them too)")
        }
        if try reader.optionalBool("firesOnce") == true {
            throw .badRequest("'\(reader.path).firesOnce' is only allowed on query subscriptions")
        }
        if try reader.optional("query") != nil {
            throw .badRequest("'\(reader.path).query' is only allowed on query subscriptions")
        }
    }

    /// The subscription dictionary. Zone IDs carry `zoneOwner` as their owner.
    package func wireJSON(zoneOwner: String?) -> JSON {
        var members: [String: JSON] = [
            "subscriptionID": .string(subscriptionID),
            "subscriptionType": .string(typeName),
            "notificationInfo": notificationInfo.wireJSON,
        ]
        switch kind {
        case .query(let query, let scope, let firesOn, let firesOnce):
            members["query"] = query.wireJSON
            switch scope {
            case .zone(let name): members["zoneID"] = ZoneID(zoneName: name, ownerRecordName: zoneOwner).wireJSON
            case .allZones: members["zoneWide"] = .bool(true)
            }
            members["firesOn"] = .array(firesOn.sorted().map { .string($0.rawValue) })
            members["firesOnce"] = .bool(firesOnce)
        case .zone(let name, let recordType):
            members["zoneID"] = ZoneID(zoneName: name, ownerRecordName: zoneOwner).wireJSON
            if let recordType { members["recordType"] = .string(recordType) }
        case .database:
            break
        }
        return .object(members)
    }
}

extension NotificationInfo {
    /// Decodes a notification info dictionary.
    package init(wire reader: WireReader) throws(CloudKitError) {
        _ = try reader.object()
        self.init(
            alertBody: try reader.optionalString("alertBody"),
            alertLocalizationKey: try reader.optionalString("alertLocalizationKey"),
            alertLocalizationArgs: try reader.optionalStringArray("alertLocalizationArgs"),
            alertActionLocalizationKey: try reader.optionalString("alertActionLocalizationKey"),
            alertLaunchImage: try reader.optionalString("alertLaunchImage"),
            title: try reader.optionalString("title"),
            subtitle: try reader.optionalString("subtitle"),
            soundName: try reader.optionalString("soundName"),
            shouldBadge: try reader.optionalBool("shouldBadge") ?? false,
            shouldSendContentAvailable: try reader.optionalBool("shouldSendContentAvailable") ?? false,
            desiredKeys: try reader.optionalStringArray("desiredKeys"),
            category: try reader.optionalString("category"))
    }

    /// The notification info dictionary.
    package var wireJSON: JSON {
        var members: [String: JSON] = [
            "shouldBadge": .bool(shouldBadge), "shouldSendContentAvailable": .bool(shouldSendContentAvailable),
        ]
        if let alertBody { members["alertBody"] = .string(alertBody) }
        if let alertLocalizationKey { members["alertLocalizationKey"] = .string(alertLocalizationKey) }
        if let alertLocalizationArgs { members["alertLocalizationArgs"] = .array(alertLocalizationArgs.map(JSON.string)) }
        if let alertActionLocalizationKey { members["alertActionLocalizationKey"] = .string(alertActionLocalizationKey) }
        if let alertLaunchImage { members["alertLaunchImage"] = .string(alertLaunchImage) }
        if let title { members["title"] = .string(title) }
        if let subtitle { members["subtitle"] = .string(subtitle) }
        if let soundName { members["soundName"] = .string(soundName) }
        if let desiredKeys { members["desiredKeys"] = .array(desiredKeys.map(JSON.string)) }
        if let category { members["category"] = .string(category) }
        return .object(members)
    }
}
