import Foundation
import Nimbus
import NimbusProtocol

/// Writes a fetched query subscription's filters back as an `NSPredicate` (the server keeps
/// the compiled filters, not the format the app wrote).
enum PredicateRendering {
    static func predicate(for filters: [QueryFilter]) -> NSPredicate {
        guard !filters.isEmpty else { return NSPredicate(value: true) }
        var parts: [String] = []
        var arguments: [Any] = []
        for filter in filters {
            let key: String
            switch filter.target {
            case .field(let name): key = name
            case .system(let field): key = CKQuery.key(of: .system(field))
            case .searchableFields: key = "self"
            }
            let value = filter.value.recordValue(heldBy: .init(recordName: "_"))
            switch filter.comparator {
            case .equals: parts.append("\(key) == %@")
            case .notEquals: parts.append("\(key) != %@")
            case .lessThan: parts.append("\(key) < %@")
            case .lessThanOrEquals: parts.append("\(key) <= %@")
            case .greaterThan: parts.append("\(key) > %@")
            case .greaterThanOrEquals: parts.append("\(key) >= %@")
            case .beginsWith: parts.append("\(key) BEGINSWITH %@")
            case .notBeginsWith: parts.append("NOT (\(key) BEGINSWITH %@)")
            case .in: parts.append("\(key) IN %@")
            case .notIn: parts.append("NOT (\(key) IN %@)")
            case .listContains, .listContainsAll: parts.append("\(key) CONTAINS %@")
            case .notListContains, .notListContainsAll: parts.append("NOT (\(key) CONTAINS %@)")
            case .notListContainsAny: parts.append("NONE \(key) IN %@")
            case .listMemberBeginsWith: parts.append("ANY \(key) BEGINSWITH %@")
            case .notListMemberBeginsWith: parts.append("NONE \(key) BEGINSWITH %@")
            case .containsAllTokens, .containsAnyTokens: parts.append("self CONTAINS %@")
            case .near:
                parts.append("distanceToLocation:fromLocation:(\(key), %@) < %@")
                arguments.append(value)
                arguments.append(NSNumber(value: filter.distance ?? 0))
                continue
            }
            arguments.append(value)
        }
        return NSPredicate(format: parts.joined(separator: " AND "), argumentArray: arguments)
    }
}
