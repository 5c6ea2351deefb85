/// Reads typed members out of a parsed request body, failing with a BAD_REQUEST that names
/// the path of the offending value (`operations[2].record.recordType`).
///
/// The path is kept as a chain of steps and only spelled out when an error needs it, so
/// reading a large valid body builds no path strings.
package struct WireReader: Sendable {
    package let json: JSON
    private let location: Location

    /// Where the value sits in the body, e.g. `operations[2].record`.
    package var path: String { location.path }

    package init(_ json: JSON, path: String = "") {
        self.json = json
        self.location = .text(path)
    }

    private init(_ json: JSON, location: Location) {
        self.json = json
        self.location = location
    }

    /// A path under construction: rendered by ``path`` only when asked.
    private enum Location: Sendable {
        case text(String)
        /// `parent.key`, or `key` under an empty parent (a member read by key).
        indirect case member(Location, String)
        /// `parent.key`, always with the dot.
        indirect case dotted(Location, String)
        /// `parent[index]`.
        indirect case element(Location, Int)

        var path: String {
            switch self {
            case .text(let text): return text
            case .member(let parent, let key):
                let parentPath = parent.path
                return parentPath.isEmpty ? key : "\(parentPath).\(key)"
            case .dotted(let parent, let key): return "\(parent.path).\(key)"
            case .element(let parent, let index): return "\(parent.path)[\(index)]"
            }
        }
    }

    /// A reader for `value` at `path.key` (the dot is written even when this path is empty).
    package func reader(for value: JSON, member key: String) -> WireReader {
        WireReader(value, location: .dotted(location, key))
    }

    /// A reader for `value` at `path[index]`.
    package func reader(for value: JSON, element index: Int) -> WireReader {
        WireReader(value, location: .element(location, index))
    }

    /// The body as an object, or a BAD_REQUEST naming where an object was expected.
    package func object() throws(CloudKitError) -> [String: JSON] {
        guard let members = json.object else {
            throw .badRequest("\(describe(path)) must be an object, got \(json.kindName)")
        }
        return members
    }

    func child(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    private func describe(_ path: String) -> String { path.isEmpty ? "the request body" : "'\(path)'" }

    /// The member's value; `nil` when the member is absent or null.
    private func member(_ key: String) throws(CloudKitError) -> JSON? {
        let members = try object()
        guard let value = members[key] else { return nil }
        if case .null = value { return nil }
        return value
    }

    /// A member reader; `nil` when the member is absent or null.
    package func optional(_ key: String) throws(CloudKitError) -> WireReader? {
        guard let value = try member(key) else { return nil }
        return WireReader(value, location: .member(location, key))
    }

    /// A member reader for a required member.
    package func required(_ key: String) throws(CloudKitError) -> WireReader {
        guard let reader = try optional(key) else { throw .badRequest("'\(child(key))' is required") }
        return reader
    }

    package func string() throws(CloudKitError) -> String {
        guard let value = json.string else { throw .badRequest("'\(path)' must be a string, got \(json.kindName)") }
        return value
    }

    package func bool() throws(CloudKitError) -> Bool {
        guard let value = json.bool else { throw .badRequest("'\(path)' must be a boolean, got \(json.kindName)") }
        return value
    }

    package func int() throws(CloudKitError) -> Int64 {
        guard let value = json.int64 else {
            throw .badRequest("'\(path)' must be an integer in the 64-bit range, got \(json.kindName)")
        }
        return value
    }

    /// A finite double. NaN, the infinities and literals beyond a double's range (`1e309`) are
    /// refused: JSON cannot carry them back, so a stored one could never be read again.
    package func double() throws(CloudKitError) -> Double {
        guard let value = json.double else { throw .badRequest("'\(path)' must be a number, got \(json.kindName)") }
        guard value.isFinite else {
            throw .badRequest(
                "'\(path)' must be a finite number within ±1.7976931348623157e308, got \(json.numberText ?? "\(value)")"
                    + " (NaN and infinities are not stored)")
        }
        return value
    }

    package func array() throws(CloudKitError) -> [WireReader] {
        guard let elements = json.array else { throw .badRequest("'\(path)' must be an array, got \(json.kindName)") }
        var readers: [WireReader] = []
        readers.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            readers.append(WireReader(element, location: .element(location, index)))
        }
        return readers
    }

    package func stringArray() throws(CloudKitError) -> [String] {
        var result: [String] = []
        for element in try array() { result.append(try element.string()) }
        return result
    }

    // Convenience for optional scalars. The common case (present, of the right type) reads
    // the value directly; the member reader (and its path) is made only to report an error.
    package func optionalString(_ key: String) throws(CloudKitError) -> String? {
        guard let value = try member(key) else { return nil }
        if case .string(let text) = value { return text }
        return try WireReader(value, location: .member(location, key)).string()
    }

    package func optionalBool(_ key: String) throws(CloudKitError) -> Bool? {
        guard let value = try member(key) else { return nil }
        if let flag = value.bool { return flag }
        return try WireReader(value, location: .member(location, key)).bool()
    }

    package func optionalInt(_ key: String) throws(CloudKitError) -> Int64? {
        guard let value = try member(key) else { return nil }
        if let number = value.int64 { return number }
        return try WireReader(value, location: .member(location, key)).int()
    }

    package func optionalStringArray(_ key: String) throws(CloudKitError) -> [String]? {
        try optional(key)?.stringArray()
    }
}
