#if !canImport(Darwin)
import Foundation

// swift-corelibs-foundation marks `NSPredicate(format:)` and `NSSortDescriptor(key:ascending:)`
// unavailable (no key-value coding off Apple platforms). CloudKit code builds its queries with
// them, so NimbusCloudKit declares both here: they shadow Foundation's for code that imports
// NimbusCloudKit, and keep what a `CKQuery` needs (the format, its arguments, the sort keys).

/// A query condition in `NSPredicate`'s format syntax, for ``CKQuery`` (off Apple platforms).
/// It is compiled when the query runs; see ``CKQuery`` for the subset CloudKit accepts.
open class NSPredicate: NSObject, @unchecked Sendable {
    // `@unchecked Sendable`: every stored property is a constant set in `init`; `arguments`
    // holds the values given to `init`, which are only read (converted) afterwards.

    /// The format string, as given.
    public let predicateFormat: String
    /// The values for the format's `%@`, `%d`, `%f` and `%K` specifiers, in order.
    let arguments: [Any]

    /// A predicate from a format string and its arguments (`NSPredicate(format: "title == %@", title)`).
    public convenience init(format predicateFormat: String, _ args: Any...) {
        self.init(format: predicateFormat, argumentArray: args)
    }

    public init(format predicateFormat: String, argumentArray arguments: [Any]?) {
        self.predicateFormat = predicateFormat
        self.arguments = arguments ?? []
    }

    /// `TRUEPREDICATE` (every record of the type) or `FALSEPREDICATE`.
    public convenience init(value: Bool) {
        self.init(format: value ? "TRUEPREDICATE" : "FALSEPREDICATE", argumentArray: [])
    }

    open override var description: String { predicateFormat }
}

/// A sort key for ``CKQuery/sortDescriptors`` (off Apple platforms).
open class NSSortDescriptor: NSObject, @unchecked Sendable {
    // `@unchecked Sendable`: both stored properties are constants set in `init`.

    public let key: String?
    public let ascending: Bool

    public init(key: String?, ascending: Bool) {
        self.key = key
        self.ascending = ascending
    }

    open override var description: String { "(\(key ?? "-"), \(ascending ? "ascending" : "descending"))" }
}

extension NSPredicate {
    /// The format and arguments the SDK's predicate compiler reads.
    func nimbusPredicate() throws -> (format: String, arguments: [Any]) {
        (predicateFormat, arguments)
    }
}
#endif
