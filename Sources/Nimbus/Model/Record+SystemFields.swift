import Foundation
import NimbusProtocol

extension Record {
    /// Encodes the record's identity and system fields (type, change tag, creation and
    /// modification stamps), without its fields, for a local cache. CloudKit's
    /// `encodeSystemFields(with:)`.
    ///
    /// Keep this next to your own copy of the fields; to save a local edit later, decode it
    /// with ``init(systemFieldsData:)``, set the changed fields, and save with
    /// ``SavePolicy/ifServerRecordUnchanged``: only those fields are sent, checked against
    /// the change tag.
    public func encodeSystemFields() -> Data {
        var members: [String: JSON] = [
            "v": .int(1),
            "recordName": .string(id.recordName),
            "recordType": .string(recordType),
            "zoneID": id.zoneID.wireJSON,
        ]
        if case .object(let wire) = wireRecord(fields: [:]).wireJSON() {
            for key in ["recordChangeTag", "created", "modified"] { members[key] = wire[key] }
        }
        return Data(JSON.object(members).serializedBytes())
    }

    /// Decodes a record from ``encodeSystemFields()`` output: identity and system fields, no
    /// fields, no changed keys.
    public init(systemFieldsData data: Data) throws {
        let json: JSON
        do { json = try JSON.parse(Array(data)) } catch {
            throw NimbusError(.invalidArguments, "the system fields data is not valid: \(error)")
        }
        do {
            let reader = WireReader(json)
            guard try reader.optionalInt("v") == 1 else {
                throw NimbusError(.invalidArguments, "the system fields data has an unknown version")
            }
            let wire = try NimbusProtocol.Record(wire: reader)
            let zoneID = try ZoneID(wire: reader.required("zoneID"))
            guard !wire.recordName.isEmpty, !wire.recordType.isEmpty else {
                throw NimbusError(.invalidArguments, "the system fields data has no record name or type")
            }
            self.init(wire: wire, zoneID: zoneID)
        } catch let error as CloudKitError {
            throw NimbusError(.invalidArguments, "the system fields data is not valid: \(error.reason)")
        }
    }
}
