/// Reads typed members out of a parsed request body, failing with a BAD_REQUEST that names
/// the path of the offending value (`operations[2].record.recordType`).
public struct WireReader: Sendable {
    public let json: JSON
    public let path: String

    public init(_ json: JSON, path: String = "") {
        self.json = json
        self.path = path
    }

    /// The body as an object, or a BAD_REQUEST naming where an object was expected.
    public func object() throws(CloudKitError) -> [String: JSON] {
        guard let members = json.object else {
            throw .badRequest("\(describe(path)) must be an object, got \(json.kindName)")
        }
        return members
    }

    func child(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    private func describe(_ path: String) -> String { path.isEmpty ? "the request body" : "'\(path)'" }

    /// A member reader; `nil` when the member is absent or null.
    public func optional(_ key: String) throws(CloudKitError) -> WireReader? {
        let members = try object()
        guard let value = members[key], value != .null else { return nil }
        return WireReader(value, path: child(key))
    }

    /// A member reader for a required member.
    public func required(_ key: String) throws(CloudKitError) -> WireReader {
        guard let reader = try optional(key) else { throw .badRequest("'\(child(key))' is required") }
        return reader
    }

    public func string() throws(CloudKitError) -> String {
        guard let value = json.string else { throw .badRequest("'\(path)' must be a string, got \(json.kindName)") }
        return value
    }

    public func bool() throws(CloudKitError) -> Bool {
        guard let value = json.bool else { throw .badRequest("'\(path)' must be a boolean, got \(json.kindName)") }
        return value
    }

    public func int() throws(CloudKitError) -> Int64 {
        guard let value = json.int64 else {
            throw .badRequest("'\(path)' must be an integer in the 64-bit range, got \(json.kindName)")
        }
        return value
    }

    public func double() throws(CloudKitError) -> Double {
        guard let value = json.double else { throw .badRequest("'\(path)' must be a number, got \(json.kindName)") }
        return value
    }

    public func array() throws(CloudKitError) -> [WireReader] {
        guard let elements = json.array else { throw .badRequest("'\(path)' must be an array, got \(json.kindName)") }
        return elements.enumerated().map { WireReader($0.element, path: "\(path)[\($0.offset)]") }
    }

    public func stringArray() throws(CloudKitError) -> [String] {
        var result: [String] = []
        for element in try array() { result.append(try element.string()) }
        return result
    }

    // Convenience for optional scalars.
    public func optionalString(_ key: String) throws(CloudKitError) -> String? { try optional(key)?.string() }
    public func optionalBool(_ key: String) throws(CloudKitError) -> Bool? { try optional(key)?.bool() }
    public func optionalInt(_ key: String) throws(CloudKitError) -> Int64? { try optional(key)?.int() }
    public func optionalStringArray(_ key: String) throws(CloudKitError) -> [String]? {
        try optional(key)?.stringArray()
    }
}
