/// What the documents library refuses, and why.
public enum DocumentsError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A path that would leave the synced folder: absolute, with `..` or `.`, an empty name,
    /// or a symbolic link that points out of the folder.
    case pathEscapesFolder(String)
    /// A name no file can have (empty, `.`, `..`, or holding `/`).
    case invalidName(String)
    /// No document or folder at this path.
    case notFound(String)
    /// Something already at this path (another document, or a folder where a file should go).
    case alreadyExists(String)
    /// A conflict version that is not (or no longer) unresolved.
    case unknownConflictVersion(String)

    public var description: String {
        switch self {
        case .pathEscapesFolder(let path): "the path \"\(path)\" leaves the synced folder"
        case .invalidName(let name): "\"\(name)\" is not a file name"
        case .notFound(let path): "nothing at \"\(path)\""
        case .alreadyExists(let path): "something is already at \"\(path)\""
        case .unknownConflictVersion(let name): "no unresolved conflict version \"\(name)\""
        }
    }
}
