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
        let fraction = try Self.fractionMember(of: reader)
        guard let typeName else {
            if let fraction {
                throw .badRequest("'\(fraction.path)' needs \"type\": \"TIMESTAMP\" or \"TIMESTAMP_LIST\" beside it")
            }
            self = try FieldValue.inferred(from: value)
            return
        }
        guard let type = FieldType(wireName: typeName) else {
            throw .badRequest(
                "'\(reader.path).type': unknown field type '\(typeName)'; expected one of "
                    + FieldType.allCases.map(\.rawValue).joined(separator: ", ") + " (or ASSETID, ASSETID_LIST)")
        }
        self = try FieldValue.decode(value, as: type, fraction: fraction)
    }

    /// A field dictionary's value and its `type` (`nil`: untyped). Some clients send bare
    /// values, without `{value}`: those are untyped values.
    package static func parts(of reader: WireReader) throws(CloudKitError) -> (value: WireReader, typeName: String?) {
        guard case .object(let members) = reader.json, let wrapped = members["value"] else { return (reader, nil) }
        return (reader.reader(for: wrapped, member: "value"), try reader.optionalString("type"))
    }

    /// The member of a field dictionary that carries the fractions of a millisecond of a
    /// TIMESTAMP or TIMESTAMP_LIST (Nimbus's extension: CloudKit Web Services carries whole
    /// milliseconds; clients that do not know the member ignore it).
    package static let fractionKey = "millisecondFraction"

    static func fractionMember(of reader: WireReader) throws(CloudKitError) -> WireReader? {
        guard case .object(let members) = reader.json, members["value"] != nil else { return nil }
        return try reader.optional(fractionKey)
    }

    /// Decodes a value of `type`; `fraction` is the field dictionary's `millisecondFraction`,
    /// which only a TIMESTAMP (a number) or a TIMESTAMP_LIST (an array as long as the value)
    /// may have.
    static func decode(_ reader: WireReader, as type: FieldType, fraction: WireReader? = nil) throws(CloudKitError)
        -> FieldValue
    {
        if let fraction, type != .timestamp, type != .timestampList {
            throw .badRequest(
                "'\(fraction.path)' is the fraction of a millisecond of a TIMESTAMP or TIMESTAMP_LIST, "
                    + "and this value is \(type.rawValue)")
        }
        if let elementType = type.elementType {
            let elements = try reader.array()
            var fractions: [WireReader]?
            if let fraction {
                fractions = try fraction.array()
                guard fractions?.count == elements.count else {
                    throw .badRequest(
                        "'\(fraction.path)' must hold one fraction per member of the value (\(elements.count)), "
                            + "got \(fractions?.count ?? 0)")
                }
            }
            var values: [FieldValue] = []
            values.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                values.append(try decode(element, as: elementType, fraction: fractions?[index]))
            }
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
            let milliseconds = try reader.int()
            guard let fraction else { return .timestamp(milliseconds) }
            return try decodeTimestamp(milliseconds, fraction: fraction)
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

    /// A TIMESTAMP of whole `milliseconds` and the fraction of a millisecond a client sent:
    /// a number greater than -1 and less than 1, kept to the nearest 2^-54 ms.
    static func decodeTimestamp(_ milliseconds: Int64, fraction reader: WireReader) throws(CloudKitError) -> FieldValue {
        let fraction = try reader.double()
        guard fraction > -1, fraction < 1 else {
            throw .badRequest(
                "'\(reader.path)' must be greater than -1 and less than 1: the part of a millisecond `value` leaves out")
        }
        let units = Int64((fraction * 0x1p54).rounded())
        guard let value = FieldValue.timestamp(milliseconds: milliseconds, fraction: units) else {
            throw .badRequest("'\(reader.path)': the TIMESTAMP is outside the 64-bit range of milliseconds")
        }
        return value
    }

    /// The fraction a TIMESTAMP's `millisecondFraction` carries: `fraction × 2^-54`, a
    /// `Double` that is exact (|fraction| ≤ 2^53) and whose shortest text parses back to it.
    static func wireFraction(_ fraction: Int64) -> JSON {
        .double(Double(fraction) * 0x1p-54)
    }

    /// The `millisecondFraction` of this value, if it has one: a TIMESTAMP's fraction when it
    /// is not zero; a TIMESTAMP_LIST's fractions (zeros included) when one is not zero.
    var fractionJSON: JSON? {
        switch self {
        case .timestamp(_, let fraction):
            // (Not `fraction == 0 ? nil : …`: JSON is ExpressibleByNilLiteral, so that `nil`
            // would be JSON's null, written as a member.)
            guard fraction != 0 else { return .none }
            return FieldValue.wireFraction(fraction)
        case .list(.timestamp, let members):
            let fractions = members.map { member -> Int64 in
                if case .timestamp(_, let fraction) = member { return fraction }
                return 0
            }
            guard fractions.contains(where: { $0 != 0 }) else { return .none }
            return .array(fractions.map(FieldValue.wireFraction))
        default:
            return nil
        }
    }

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
        var members: [String: JSON] = ["value": wireValue(numbersAsStrings: numbersAsStrings), "type": .string(type.rawValue)]
        if let fractionJSON { members[FieldValue.fractionKey] = fractionJSON }
        return .object(members)
    }

    /// The bare value as it appears under `value`.
    package func wireValue(numbersAsStrings: Bool = false) -> JSON {
        switch self {
        case .string(let text): return .string(text)
        case .int64(let number): return numbersAsStrings ? .string(String(number)) : .int(number)
        case .double(let number):
            guard number.isFinite else { return .double(number) }
            return numbersAsStrings ? .string("\(number)") : .double(number)
        case .timestamp(let millis, _): return .int(millis)
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
    /// Appends the field dictionary `{"millisecondFraction"?:…,"type":…,"value":…}`: the same text as
    /// `wireJSON(numbersAsStrings:).serialized()`, without building the JSON tree.
    package func writeWire(into out: inout [UInt8], numbersAsStrings: Bool = false) {
        out.append(UInt8(ascii: "{"))
        if let fractionJSON {
            // "millisecondFraction" sorts before "type".
            JSON.writeString(FieldValue.fractionKey, into: &out)
            out.append(UInt8(ascii: ":"))
            fractionJSON.write(into: &out)
            out.append(UInt8(ascii: ","))
        }
        JSON.writeRaw(#""type":"#, into: &out)
        JSON.writeString(type.rawValue, into: &out)
        JSON.writeRaw(#","value":"#, into: &out)
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
                JSON.writeInteger(number, into: &out)
            }
        case .timestamp(let millis, _):
            JSON.writeInteger(millis, into: &out)
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
