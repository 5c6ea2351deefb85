import Foundation
import NimbusProtocol

extension Record {
    /// A record decoded from the wire, placed in `zoneID` (the zone the request was about).
    init(wire: NimbusProtocol.Record, zoneID: ZoneID) {
        self.init(
            id: ID(recordName: wire.recordName, zoneID: zoneID), recordType: wire.recordType,
            recordChangeTag: wire.recordChangeTag,
            creationDate: wire.created.map { Date(millisecondsSince1970: $0.timestamp) },
            creatorUserRecordName: wire.created?.userRecordName,
            modificationDate: wire.modified.map { Date(millisecondsSince1970: $0.timestamp) },
            lastModifiedUserRecordName: wire.modified?.userRecordName, lastModifiedDeviceID: wire.modified?.deviceID,
            values: wire.fields)
    }

    /// The wire record holding the system fields and the given fields.
    func wireRecord(fields: [String: FieldValue], includeTag: Bool = true) -> NimbusProtocol.Record {
        NimbusProtocol.Record(
            recordName: id.recordName, recordType: recordType,
            recordChangeTag: includeTag ? recordChangeTag : nil, fields: fields,
            created: creationDate.map {
                RecordStamp(timestamp: $0.millisecondsSince1970, userRecordName: creatorUserRecordName)
            },
            modified: modificationDate.map {
                RecordStamp(
                    timestamp: $0.millisecondsSince1970, userRecordName: lastModifiedUserRecordName,
                    deviceID: lastModifiedDeviceID)
            })
    }

    /// What a save of this record sends under `policy`: the `operationType` and the fields.
    func saveOperation(policy: SavePolicy) -> (operationType: String, fields: [String: FieldValue], sendsTag: Bool) {
        // Worked out only where the policy asks (a new record's save sends its values as they are).
        var removesKeys: Bool { originalValues.keys.contains { values[$0] == nil } }
        var changed: [String: FieldValue] { values.filter { originalValues[$0.key] != nil } }
        switch policy {
        case .ifServerRecordUnchanged:
            if !isSaved { return ("create", values, false) }
            if removesKeys { return ("replace", values, true) }
            return ("update", changed, true)
        case .changedKeys:
            if removesKeys { return ("forceReplace", values, false) }
            return ("forceUpdate", isSaved ? changed : values, false)
        case .allKeys:
            return ("forceReplace", values, false)
        }
    }

    /// The `records/modify` operation dictionary that saves this record under `policy`.
    func modifyOperationJSON(policy: SavePolicy, desiredKeys: [String]? = nil) -> JSON {
        let (operationType, fields, sendsTag) = saveOperation(policy: policy)
        var recordJSON = NimbusProtocol.Record(
            recordName: id.recordName, recordType: recordType, recordChangeTag: sendsTag ? recordChangeTag : nil,
            fields: fields
        ).wireJSON()
        if case .object(var members) = recordJSON {
            members["deleted"] = nil
            addingSharingMembers(to: &members)
            recordJSON = .object(members)
        }
        var operation: [String: JSON] = ["operationType": .string(operationType), "record": recordJSON]
        if let desiredKeys { operation["desiredKeys"] = .array(desiredKeys.map(JSON.string)) }
        return .object(operation)
    }
}
