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
        Data(encodeSystemFieldsBytes())
    }

    /// ``encodeSystemFields()`` as bytes, for a store that binds them straight into a statement.
    package func encodeSystemFieldsBytes() -> [UInt8] {
        // The compact JSON of `{created?, encryptedKeys?, modified?, parent?, recordChangeTag?, recordName,
        // recordType, share?, shareState?, v: 1, zoneID}` with members in sorted order (what serializing that object gives),
        // written straight to bytes: a sync engine stores one per record it fetches.
        var out: [UInt8] = []
        // Room for the usual two stamps with their user and device names.
        out.reserveCapacity(256 + id.recordName.utf8.count + recordType.utf8.count)
        out.append(UInt8(ascii: "{"))
        if let creationDate {
            Self.appendKey("created", to: &out)
            Self.appendStamp(
                timestamp: creationDate.millisecondsSince1970, user: creatorUserRecordName, device: nil, to: &out)
            out.append(UInt8(ascii: ","))
        }
        if !encryptedKeys.isEmpty {
            // Which fields are encrypted, so that a cached record seals them again on its next save.
            Self.appendKey("encryptedKeys", to: &out)
            out.append(UInt8(ascii: "["))
            for (offset, key) in encryptedKeys.sorted().enumerated() {
                if offset > 0 { out.append(UInt8(ascii: ",")) }
                JSON.writeString(key, into: &out)
            }
            JSON.writeRaw("],", into: &out)
        }
        if let modificationDate {
            Self.appendKey("modified", to: &out)
            Self.appendStamp(
                timestamp: modificationDate.millisecondsSince1970, user: lastModifiedUserRecordName,
                device: lastModifiedDeviceID, to: &out)
            out.append(UInt8(ascii: ","))
        }
        let sharing = sharingSystemMembers
        if let parent = sharing.parent {
            Self.appendKey("parent", to: &out)
            parent.write(into: &out)
            out.append(UInt8(ascii: ","))
        }
        if let recordChangeTag {
            Self.appendKey("recordChangeTag", to: &out)
            JSON.writeString(recordChangeTag, into: &out)
            out.append(UInt8(ascii: ","))
        }
        Self.appendKey("recordName", to: &out)
        JSON.writeString(id.recordName, into: &out)
        out.append(UInt8(ascii: ","))
        Self.appendKey("recordType", to: &out)
        JSON.writeString(recordType, into: &out)
        if let share = sharing.share {
            out.append(UInt8(ascii: ","))
            Self.appendKey("share", to: &out)
            share.write(into: &out)
        }
        if let shareState = sharing.shareState {
            out.append(UInt8(ascii: ","))
            Self.appendKey("shareState", to: &out)
            shareState.write(into: &out)
        }
        JSON.writeRaw(#","v":1,"zoneID":{"#, into: &out)
        if let owner = id.zoneID.ownerRecordName {
            Self.appendKey("ownerRecordName", to: &out)
            JSON.writeString(owner, into: &out)
            out.append(UInt8(ascii: ","))
        }
        Self.appendKey("zoneName", to: &out)
        JSON.writeString(id.zoneID.zoneName, into: &out)
        JSON.writeRaw("}}", into: &out)
        return out
    }

    /// `"key":`
    private static func appendKey(_ key: StaticString, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        JSON.writeRaw(key, into: &out)
        JSON.writeRaw("\":", into: &out)
    }

    /// `{deviceID?, timestamp, userRecordName?}`, as a `RecordStamp`'s wire JSON serializes.
    private static func appendStamp(timestamp: Int64, user: String?, device: String?, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        if let device {
            appendKey("deviceID", to: &out)
            JSON.writeString(device, into: &out)
            out.append(UInt8(ascii: ","))
        }
        appendKey("timestamp", to: &out)
        JSON.writeInteger(timestamp, into: &out)
        if let user {
            out.append(UInt8(ascii: ","))
            appendKey("userRecordName", to: &out)
            JSON.writeString(user, into: &out)
        }
        out.append(UInt8(ascii: "}"))
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
            readSharingMembers(from: json)
            encryptedKeys = Set(json["encryptedKeys"]?.array?.compactMap(\.string) ?? [])
            if let state = json["shareState"]?.object { shareState = Share.State(wire: state) }
        } catch let error as CloudKitError {
            throw NimbusError(.invalidArguments, "the system fields data is not valid: \(error.reason)")
        }
    }
}
