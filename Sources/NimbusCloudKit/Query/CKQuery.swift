import Foundation
import Nimbus
import NimbusProtocol

#if canImport(CoreLocation)
import CoreLocation
#endif

/// A query: the records of one type that match a predicate, in an order.
///
/// ```swift
/// let query = CKQuery(recordType: "Note", predicate: NSPredicate(format: "done == NO AND title BEGINSWITH %@", "Gro"))
/// query.sortDescriptors = [NSSortDescriptor(key: "due", ascending: true)]
/// let (results, cursor) = try await database.records(matching: query)
/// ```
///
/// The predicate is the subset of `NSPredicate` syntax CloudKit accepts: `==`, `!=`, `<`,
/// `<=`, `>`, `>=`, `BETWEEN`, `BEGINSWITH`, `IN`, `CONTAINS` on a list field, `ANY`,
/// `self CONTAINS` (token search), `distanceToLocation:fromLocation:` (meters),
/// `TRUEPREDICATE`, and `AND`/`NOT` of those. A predicate outside it makes running the query
/// fail with ``CKError/Code/invalidArguments`` naming what CloudKit offers instead (CloudKit
/// raises an exception when the query is made).
///
/// `@unchecked Sendable`: `recordType` and `predicate` are constants set in `init`; the sort
/// keys, the one mutable part, live in a `Locked` and are copied in and out under its lock.
public final class CKQuery: NSObject, NSCopying, @unchecked Sendable {
    public let recordType: CKRecord.RecordType
    public let predicate: NSPredicate
    private let sorts = Locked<[QuerySort]>([])

    public init(recordType: CKRecord.RecordType, predicate: NSPredicate) {
        self.recordType = recordType
        self.predicate = predicate
    }

    /// The order of the results (by field, ascending or descending).
    public var sortDescriptors: [NSSortDescriptor]? {
        get {
            let current = sorts.current
            guard !current.isEmpty else { return nil }
            return current.map { NSSortDescriptor(key: Self.key(of: $0.target), ascending: $0.ascending) }
        }
        set {
            let converted = (newValue ?? []).compactMap { descriptor in
                descriptor.key.map { QuerySort(Self.target(ofKey: $0), ascending: descriptor.ascending) }
            }
            sorts.withLock { $0 = converted }
        }
    }

    /// What a sort key names: a field, or the system fields CloudKit sorts by.
    static func target(ofKey key: String) -> QueryFilter.Target {
        switch key {
        case "creationDate": return .system(.createdTimestamp)
        case "modificationDate": return .system(.modifiedTimestamp)
        case "recordID": return .system(.recordName)
        default: return .field(key)
        }
    }

    static func key(of target: QueryFilter.Target) -> String {
        switch target {
        case .field(let name): return name
        case .system(.createdTimestamp): return "creationDate"
        case .system(.modifiedTimestamp): return "modificationDate"
        case .system(.recordName): return "recordID"
        case .system(let field): return field.rawValue
        case .searchableFields: return "self"
        }
    }

    public func copy(with zone: NSZone? = nil) -> Any {
        let copy = CKQuery(recordType: recordType, predicate: predicate)
        let current = sorts.current
        copy.sorts.withLock { $0 = current }
        return copy
    }

    /// The SDK query, the predicate compiled.
    /// - Throws: ``CKError/Code/invalidArguments`` for a predicate CloudKit does not support.
    func nimbus() throws(CKError) -> Query {
        do {
            let (format, values) = try predicate.nimbusPredicate()
            var arguments: [any PredicateArgument] = []
            for value in values {
                guard let argument = Self.argument(value) else {
                    throw CKError(.invalidArguments, message: "a query cannot compare with a \(type(of: value))")
                }
                arguments.append(argument)
            }
            let compiled = try Query.Predicate(format: format, argumentArray: arguments)
            return Query(recordType: recordType, predicate: compiled, sortDescriptors: sorts.current)
        } catch {
            throw CKError.wrapping(error)
        }
    }

    /// The SDK predicate argument for a value given to `NSPredicate(format:)`.
    static func argument(_ value: Any) -> (any PredicateArgument)? {
        switch value {
        case let value as String: return value
        case let value as CKRecord.Reference: return value.nimbus
        case let value as CKRecord: return NimbusProtocol.Reference(recordID: value.recordID.nimbus)
        case let value as CKRecord.ID: return NimbusProtocol.Reference(recordID: value.nimbus)
        case let value as CLLocation: return value.nimbus
        case let value as Date: return value
        case let value as NSDate: return Date(timeIntervalSinceReferenceDate: value.timeIntervalSinceReferenceDate)
        case let value as Data: return value
        case let value as NSNumber:
            switch String(cString: value.objCType) {
            case "f", "d": return value.doubleValue
            default: return value.int64Value
            }
        case let value as [Any]:
            var elements: [FieldValue] = []
            for element in value {
                guard let argument = argument(element) else { return nil }
                elements.append(argument.predicateValue)
            }
            return FieldValue.list(elementType: elements.first?.type ?? .string, elements)
        default: return nil
        }
    }
}
