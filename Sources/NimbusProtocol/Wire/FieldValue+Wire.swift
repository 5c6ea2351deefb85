import Foundation

extension FieldValue {
    /// Decodes a field dictionary `{value, type?}`. Without `type` the type is inferred from
    /// the value: strings are STRING, integers INT64, other numbers DOUBLE, objects with
    /// `fileChecksum` (or `receipt`) ASSET, other objects with `recordName` REFERENCE, objects
    /// with `latitude` LOCATION, arrays the list of their first element's type. Booleans are
    /// stored as INT64 0/1, as CloudKit stores them. (Where the schema knows the field, a
    /// record's untyped values take its type instead: ``typed(untyped:as:)``.)
    package init(wire reader: WireReader) throws(CloudKitError) {
        let (value, typeName) = try Self.parts(of: reader)
        guard let typeName else {
            self = try FieldValue.inferred(from: value)
            return
        }
        guard let type = FieldType(wireName: typeName) else {
            throw .badRequest(
                "'\(reader.path).type': unknown field type '\(typeName)'; expected one of "
                    + FieldType.allCases.map(\.rawValue).joined(separator: ", ") + " (or ASSETID, ASSETID_LIST)")
        }
        self = try FieldValue.decode(value, as: type)
    }

    /// A field dictionary's value and its `type` (`nil`: untyped). Some clients send bare
    /// values, without `{value}`: those are untyped values.
    package static func parts(of reader: WireReader) throws(CloudKitError) -> (value: WireReader, typeName: String?) {
        guard case .object(let members) = reader.json, let wrapped = members["value"] else { return (reader, nil) }
        return (reader.reader(for: wrapped, member: "value"), try reader.optionalString("type"))
    }

    static func decode(_ reader: WireReader, as type: FieldType) throws(CloudKitError) -> FieldValue {
        if let elementType = type.elementType {
            var values: [FieldValue] = []
            for element in try reader.array() { values.append(try decode(element, as: elementType)) }
            return .list(elementType: elementType, values)
        }
        switch type {
        case .string:
            return .string(try reader.string())
        case .int64:
            if case .bool(let flag) = reader.json { return .int64(flag ? 1 : 0) }
            return .int64(try reader.int())
        case .double:
            return .double(try reader.double())
        case .timestamp:
            return .timestamp(try reader.int())
        case .bytes:
            return .bytes(try base64Bytes(reader))
        case .encryptedBytes:
            let envelope = try base64Bytes(reader)
            guard !envelope.isEmpty, envelope.count <= maxEncryptedBytes else {
                throw .badRequest(
                    "'\(reader.path)': an ENCRYPTED_BYTES value is a sealed envelope of 1 to \(maxEncryptedBytes) bytes; "
                        + "got \(envelope.count)")
            }
            return .encryptedBytes(envelope)
        case .location:
            return .location(try Location(wire: reader))
        case .reference:
            return .reference(try Reference(wire: reader))
        case .asset:
            return .asset(try Asset(wire: reader))
        default:
            throw .badRequest("'\(reader.path)': unsupported field type \(type.rawValue)")
        }
    }

    /// The longest envelope an `ENCRYPTED_BYTES` value may hold: a record's fields are limited
    /// to 1 MB as a whole in CloudKit; one field's envelope cannot exceed that.
    static let maxEncryptedBytes = 1 << 20

    static func base64Bytes(_ reader: WireReader) throws(CloudKitError) -> Data {
        let text = try reader.string()
        guard let data = Data(base64Encoded: text) ?? Data(base64URLEncoded: text) else {
            throw .badRequest("'\(reader.path)' must be base64-encoded bytes")
        }
        return data
    }

    static func inferred(from reader: WireReader) throws(CloudKitError) -> FieldValue {
        switch reader.json {
        case .string(let text): return .string(text)
        case .bool(let flag): return .int64(flag ? 1 : 0)
        case .number(let text):
            if let integer = Int64(text) { return .int64(integer) }
            if text.allSatisfy({ $0.isNumber || $0 == "-" }) {
                throw .badRequest("'\(reader.path)' is an integer outside the 64-bit range")
            }
            return .double(try reader.double())
        case .object(let members):
            // An asset first: the dictionary `assets/rereference` answers also has `recordName`
            // (the record it came from), and CloudKit JS saves it back untyped.
            if members["fileChecksum"] != nil || members["receipt"] != nil { return .asset(try Asset(wire: reader)) }
            if members["recordName"] != nil { return .reference(try Reference(wire: reader)) }
            if members["latitude"] != nil { return .location(try Location(wire: reader)) }
            throw .badRequest("'\(reader.path)': cannot infer the type of this object; add \"type\"")
        case .array(let elements):
            guard let first = elements.first else {
                throw .badRequest("'\(reader.path)': cannot infer the type of an empty list; add \"type\"")
            }
            let elementType = try inferred(from: reader.reader(for: first, element: 0)).type
            return try decode(reader, as: elementType.listType ?? .stringList)
        case .null, .raw, .rawUTF8:
            throw .badRequest("'\(reader.path)' has no value")
        }
    }

    /// The field dictionary `{value, type}`.
    package func wireJSON(numbersAsStrings: Bool = false) -> JSON {
        .object(["value": wireValue(numbersAsStrings: numbersAsStrings), "type": .string(type.rawValue)])
    }

    /// The bare value as it appears under `value`.
    package func wireValue(numbersAsStrings: Bool = false) -> JSON {
        switch self {
        case .string(let text): return .string(text)
        case .int64(let number): return numbersAsStrings ? .string(String(number)) : .int(number)
        case .double(let number):
            guard number.isFinite else { return .double(number) }
            return numbersAsStrings ? .string("\(number)") : .double(number)
        case .timestamp(let millis): return .int(millis)
        case .bytes(let data), .encryptedBytes(let data): return .string(data.base64EncodedString())
        case .location(let location): return location.wireJSON
        case .reference(let reference): return reference.wireJSON
        case .asset(let asset): return asset.wireJSON
        case .list(_, let values): return .array(values.map { $0.wireValue(numbersAsStrings: numbersAsStrings) })
        }
    }
}

extension Location {
    init(wire reader: WireReader) throws(CloudKitError) {
        let latitude = try reader.required("latitude").double()
        let longitude = try reader.required("longitude").double()
        guard (-90...90).contains(latitude), (-180...180).contains(longitude) else {
            throw .badRequest("'\(reader.path)': latitude must be within ±90 and longitude within ±180")
        }
        self.init(
            latitude: latitude, longitude: longitude,
            horizontalAccuracy: try reader.optional("horizontalAccuracy")?.double(),
            verticalAccuracy: try reader.optional("verticalAccuracy")?.double(),
            altitude: try reader.optional("altitude")?.double(),
            speed: try reader.optional("speed")?.double(),
            course: try reader.optional("course")?.double(),
            timestamp: try reader.optionalInt("timestamp"))
    }

    var wireJSON: JSON {
        var members: [String: JSON] = ["latitude": .double(latitude), "longitude": .double(longitude)]
        if let horizontalAccuracy { members["horizontalAccuracy"] = .double(horizontalAccuracy) }
        if let verticalAccuracy { members["verticalAccuracy"] = .double(verticalAccuracy) }
        if let altitude { members["altitude"] = .double(altitude) }
        if let speed { members["speed"] = .double(speed) }
        if let course { members["course"] = .double(course) }
        if let timestamp { members["timestamp"] = .int(timestamp) }
        return .object(members)
    }
}

extension Reference {
    init(wire reader: WireReader) throws(CloudKitError) {
        let recordName = try reader.required("recordName").string()
        guard !recordName.isEmpty else { throw .badRequest("'\(reader.path).recordName' must not be empty") }
        let actionName = try reader.optionalString("action") ?? "NONE"
        guard let action = Action(rawValue: actionName) else {
            throw .badRequest("'\(reader.path).action' must be NONE, DELETE_SELF or VALIDATE, got '\(actionName)'")
        }
        let zoneID = try reader.optional("zoneID").map { reader throws(CloudKitError) in try ZoneID(wire: reader) }
        self.init(recordName: recordName, zoneID: zoneID, action: action)
    }

    var wireJSON: JSON {
        var members: [String: JSON] = ["recordName": .string(recordName), "action": .string(action.rawValue)]
        if let zoneID { members["zoneID"] = zoneID.wireJSON }
        return .object(members)
    }
}

extension Asset {
    /// The longest ``fileChecksum``, ``receipt``, ``referenceChecksum`` or ``wrappingKey``
    /// accepted: far above what any of them holds (a checksum is 44 characters).
    static let maxTokenLength = 1024
    /// The longest ``downloadURL`` accepted.
    static let maxURLLength = 8192

    /// Decodes an Asset dictionary (`singleFile` as an upload answered it, or an ASSET value).
    package init(wire reader: WireReader) throws(CloudKitError) {
        func token(_ key: String, limit: Int = Asset.maxTokenLength) throws(CloudKitError) -> String? {
            guard let text = try reader.optionalString(key) else { return nil }
            guard !text.isEmpty, text.utf8.count <= limit else {
                throw .badRequest("'\(reader.path).\(key)' must be a non-empty string of at most \(limit) bytes")
            }
            return text
        }
        guard let checksum = try token("fileChecksum") else {
            throw .badRequest("'\(reader.path).fileChecksum' is required: send the singleFile dictionary the upload answered")
        }
        guard let size = try reader.optionalInt("size") else {
            throw .badRequest("'\(reader.path).size' is required: send the singleFile dictionary the upload answered")
        }
        guard size >= 0 else { throw .badRequest("'\(reader.path).size' must not be negative") }
        self.init(
            fileChecksum: checksum, size: size, receipt: try token("receipt"),
            referenceChecksum: try token("referenceChecksum"), wrappingKey: try token("wrappingKey"),
            downloadURL: try token("downloadURL", limit: Asset.maxURLLength))
    }

    /// `{downloadURL?, fileChecksum, receipt?, referenceChecksum?, size, wrappingKey?}`.
    package var wireJSON: JSON {
        var members: [String: JSON] = ["fileChecksum": .string(fileChecksum), "size": .int(size)]
        if let receipt { members["receipt"] = .string(receipt) }
        if let referenceChecksum { members["referenceChecksum"] = .string(referenceChecksum) }
        if let wrappingKey { members["wrappingKey"] = .string(wrappingKey) }
        if let downloadURL { members["downloadURL"] = .string(downloadURL) }
        return .object(members)
    }
}

extension Data {
    init?(base64URLEncoded text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64.append("=") }
        self.init(base64Encoded: base64)
    }
}

extension FieldValue {
    /// Appends the field dictionary `{"type":…,"value":…}`: the same text as
    /// `wireJSON(numbersAsStrings:).serialized()`, without building the JSON tree.
    package func writeWire(into out: inout [UInt8], numbersAsStrings: Bool = false) {
        out.append(contentsOf: #"{"type":"#.utf8)
        JSON.writeString(type.rawValue, into: &out)
        out.append(contentsOf: #","value":"#.utf8)
        writeWireValue(into: &out, numbersAsStrings: numbersAsStrings)
        out.append(UInt8(ascii: "}"))
    }

    /// Appends the bare value: the same text as `wireValue(numbersAsStrings:).serialized()`.
    package func writeWireValue(into out: inout [UInt8], numbersAsStrings: Bool = false) {
        switch self {
        case .string(let text):
            JSON.writeString(text, into: &out)
        case .int64(let number):
            if numbersAsStrings {
                JSON.writeString(String(number), into: &out)
            } else {
                out.append(contentsOf: String(number).utf8)
            }
        case .timestamp(let millis):
            out.append(contentsOf: String(millis).utf8)
        case .list(_, let values):
            out.append(UInt8(ascii: "["))
            for (offset, value) in values.enumerated() {
                if offset > 0 { out.append(UInt8(ascii: ",")) }
                value.writeWireValue(into: &out, numbersAsStrings: numbersAsStrings)
            }
            out.append(UInt8(ascii: "]"))
        case .double, .bytes, .encryptedBytes, .location, .reference, .asset:
            wireValue(numbersAsStrings: numbersAsStrings).write(into: &out)
        }
    }
}
