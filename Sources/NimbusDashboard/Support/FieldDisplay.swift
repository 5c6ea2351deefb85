import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// A record field as pages show it: text, links (references, asset downloads) and image
/// previews, and the text its edit box holds.
struct FieldDisplay {
    var name: String
    var type: String
    var text: String
    var links: [[String: String]]
    var images: [String]
    /// What the edit form shows; `nil`: not editable as text (assets).
    var editText: String?

    /// The types edited as plain text rather than as JSON.
    static let textTypes: Set<String> = ["STRING", "INT64", "DOUBLE", "TIMESTAMP"]
    /// Types a new field may be given in the form.
    static let formTypes = [
        "STRING", "INT64", "DOUBLE", "TIMESTAMP", "REFERENCE", "LOCATION", "BYTES", "STRING_LIST", "INT64_LIST",
        "DOUBLE_LIST", "TIMESTAMP_LIST", "REFERENCE_LIST",
    ]

    /// - Parameter recordLink: the dashboard query of a record in the page's database, by zone and name.
    init(name: String, field: JSON, recordLink: (_ zone: String?, _ recordName: String) -> String) {
        self.name = name
        let value = field["value"] ?? .null
        type = field["type"]?.string ?? Self.inferredType(value)
        links = []
        images = []
        switch type {
        case FieldType.encryptedBytes.rawValue: text = Self.encryptedSummary(value)
        case "STRING": text = value.string ?? value.serialized()
        case "TIMESTAMP":
            let millis = value.int64 ?? 0
            text = "\(Format.date(millis)) (\(millis))"
        case "REFERENCE", "REFERENCE_LIST":
            let references = type == "REFERENCE" ? [value] : (value.array ?? [])
            for reference in references {
                guard let recordName = reference["recordName"]?.string else { continue }
                let zone = reference["zoneID"]?["zoneName"]?.string
                links.append(["href": "/dashboard/record?" + recordLink(zone, recordName), "label": recordName])
            }
            text = ""
        case "ASSET", "ASSETID", "ASSET_LIST":
            let assets = type == "ASSET_LIST" ? (value.array ?? []) : [value]
            for asset in assets {
                let size = asset["size"]?.int64.map { "\($0) bytes" } ?? "asset"
                guard let url = asset["downloadURL"]?.string else { continue }
                let href = url.replacingOccurrences(of: Asset.fileNamePlaceholder, with: DashboardApp.queryEncoded(name))
                links.append(["href": href, "label": "Download (\(size))"])
                images.append(href)
            }
            text = ""
        default:
            text = value.serialized()
        }
        switch type {
        case "STRING": editText = value.string ?? ""
        case "INT64", "DOUBLE", "TIMESTAMP": editText = value.serialized().trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        case "ASSET", "ASSETID", "ASSET_LIST", FieldType.encryptedBytes.rawValue: editText = nil
        default: editText = value.serialized()
        }
    }

    var values: [String: Any] {
        [
            "name": name, "type": type, "text": text, "links": links, "images": images.map { ["src": $0] },
            "editText": editText ?? "", "editable": editText != nil, "isText": Self.textTypes.contains(type),
        ]
    }

    /// What the operator sees of an encrypted value: that it is encrypted, and its size;
    /// never its bytes (docs/ENCRYPTION.md).
    static func encryptedSummary(_ value: JSON) -> String {
        let size = value.string.flatMap { Data(base64Encoded: $0)?.count }.map { "\($0) bytes" } ?? "unreadable"
        return "encrypted (\(size))"
    }

    /// A record's JSON with each encrypted field's value replaced by ``encryptedSummary(_:)``:
    /// what pages may print of a whole record.
    static func redactingEncrypted(_ record: JSON) -> JSON {
        guard case .object(var members) = record, case .object(var fields)? = members["fields"] else { return record }
        for (name, field) in fields where field["type"]?.string == FieldType.encryptedBytes.rawValue {
            fields[name] = ["type": field["type"] ?? .null, "value": .string(encryptedSummary(field["value"] ?? .null))]
        }
        members["fields"] = .object(fields)
        return .object(members)
    }

    static func inferredType(_ value: JSON) -> String {
        switch value {
        case .string: return "STRING"
        case .number(let text): return text.contains(".") || text.contains("e") ? "DOUBLE" : "INT64"
        default: return "UNKNOWN"
        }
    }

    /// The wire value of a field from its form text.
    static func wireValue(_ text: String, type: String, field: String) throws -> JSON {
        let bad = { (what: String) in
            DashboardError(status: .badRequest, title: "Bad value", message: "Field \(field): \(what).")
        }
        switch type {
        case "STRING": return .string(text)
        case "INT64", "TIMESTAMP":
            guard let number = Int64(text.trimmingCharacters(in: .whitespaces)) else { throw bad("\(type) takes a whole number") }
            return .int(number)
        case "DOUBLE":
            guard let number = Double(text.trimmingCharacters(in: .whitespaces)), number.isFinite else {
                throw bad("DOUBLE takes a number")
            }
            return .double(number)
        default:
            do { return try JSON.parse(text) } catch { throw bad("\(type) takes a JSON value as the API does (\(error))") }
        }
    }
}
