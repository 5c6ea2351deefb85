/// A path inside the synced folder: its components from the folder's root, each a name (never
/// empty, `.` or `..`). What the library accepts from the app and from the disk, so nothing
/// it writes or reads can be outside the folder.
///
/// ```swift
/// let path = try DocumentPath("Projects/Plan.txt")      // ["Projects", "Plan.txt"]
/// try DocumentPath("../etc/passwd")                     // throws .pathEscapesFolder
/// ```
public struct DocumentPath: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The names from the folder's root down; empty for the root itself.
    public let components: [String]

    /// The folder's root.
    public static let root = DocumentPath(checked: [])

    /// Parses a relative path with `/` between its names.
    ///
    /// - Throws: ``DocumentsError/pathEscapesFolder(_:)`` for an absolute path (`/…`, `\…`,
    ///   `C:…`), a `..` or `.` component, an empty component (`a//b`), or a NUL character.
    public init(_ path: String) throws {
        if path.isEmpty {
            self = .root
            return
        }
        if path.hasPrefix("/") || path.hasPrefix("\\") || Self.hasDrive(path) || path.contains("\0") {
            throw DocumentsError.pathEscapesFolder(path)
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        try self.init(components: parts, original: path)
    }

    /// A path of these names.
    ///
    /// - Throws: ``DocumentsError/pathEscapesFolder(_:)`` when a name is empty, `.`, `..`,
    ///   holds a `/` or a NUL character.
    public init(components: [String]) throws {
        try self.init(components: components, original: components.joined(separator: "/"))
    }

    private init(components: [String], original: String) throws {
        for name in components where name.isEmpty || name == "." || name == ".." || name.contains("/") || name.contains("\0") {
            throw DocumentsError.pathEscapesFolder(original)
        }
        self.components = components
    }

    init(checked components: [String]) {
        self.components = components
    }

    private static func hasDrive(_ path: String) -> Bool {
        let scalars = Array(path.unicodeScalars.prefix(2))
        return scalars.count == 2 && scalars[1] == ":" && scalars[0].isASCII && scalars[0].properties.isAlphabetic
    }

    /// The last name; `nil` for the root.
    public var name: String? { components.last }

    /// The folder that holds this path; `nil` for the root.
    public var parent: DocumentPath? {
        components.isEmpty ? nil : DocumentPath(checked: Array(components.dropLast()))
    }

    /// This path with `name` below it.
    ///
    /// - Throws: ``DocumentsError/pathEscapesFolder(_:)`` for a name that is not one.
    public func appending(_ name: String) throws -> DocumentPath {
        try DocumentPath(components: components + [name])
    }

    /// Whether `self` is `other` or inside it.
    public func isWithin(_ other: DocumentPath) -> Bool {
        components.starts(with: other.components)
    }

    public static func < (lhs: DocumentPath, rhs: DocumentPath) -> Bool {
        lhs.components.lexicographicallyPrecedes(rhs.components)
    }

    public var description: String { components.joined(separator: "/") }
}
