#if canImport(Darwin)
import Foundation

// On Apple platforms `NSPredicate(format:)` substitutes its arguments into an expression tree;
// this walks that tree back into a format with `%@` specifiers and the constant values, which
// the SDK's predicate compiler reads (the same subset CloudKit accepts).

extension NSPredicate {
    /// The format and arguments the SDK's predicate compiler reads.
    func nimbusPredicate() throws -> (format: String, arguments: [Any]) {
        var arguments: [Any] = []
        let format = try Self.format(of: self, arguments: &arguments)
        return (format, arguments)
    }

    private static func format(of predicate: NSPredicate, arguments: inout [Any]) throws -> String {
        if let compound = predicate as? NSCompoundPredicate {
            let parts = try (compound.subpredicates as? [NSPredicate] ?? []).map {
                "(" + (try format(of: $0, arguments: &arguments)) + ")"
            }
            switch compound.compoundPredicateType {
            case .and: return parts.joined(separator: " AND ")
            case .or: return parts.joined(separator: " OR ")
            case .not: return "NOT " + (parts.first ?? "TRUEPREDICATE")
            @unknown default: throw unsupported(predicate)
            }
        }
        guard let comparison = predicate as? NSComparisonPredicate else {
            // `NSPredicate(value:)` and anything else that is not a comparison.
            return predicate.predicateFormat
        }
        let modifier: String
        switch comparison.comparisonPredicateModifier {
        case .any: modifier = "ANY "
        case .all: modifier = "ALL "
        default: modifier = ""
        }
        let left = try expression(comparison.leftExpression, arguments: &arguments)
        let right = try expression(comparison.rightExpression, arguments: &arguments)
        let symbol: String
        switch comparison.predicateOperatorType {
        case .lessThan: symbol = "<"
        case .lessThanOrEqualTo: symbol = "<="
        case .greaterThan: symbol = ">"
        case .greaterThanOrEqualTo: symbol = ">="
        case .equalTo: symbol = "=="
        case .notEqualTo: symbol = "!="
        case .beginsWith: symbol = "BEGINSWITH"
        case .in: symbol = "IN"
        case .contains: symbol = "CONTAINS"
        case .between: symbol = "BETWEEN"
        default: throw unsupported(predicate)
        }
        return "\(modifier)\(left) \(symbol) \(right)"
    }

    private static func expression(_ expression: NSExpression, arguments: inout [Any]) throws -> String {
        switch expression.expressionType {
        case .keyPath: return expression.keyPath
        case .evaluatedObject: return "self"
        case .constantValue:
            arguments.append(expression.constantValue ?? NSNull())
            return "%@"
        case .aggregate:
            let elements = expression.collection as? [NSExpression] ?? []
            let parts = try elements.map { try self.expression($0, arguments: &arguments) }
            return "{" + parts.joined(separator: ", ") + "}"
        case .function where expression.function == "distanceToLocation:fromLocation:":
            let operands = try (expression.arguments ?? []).map { try self.expression($0, arguments: &arguments) }
            return "distanceToLocation:fromLocation:(" + operands.joined(separator: ", ") + ")"
        default:
            throw CKError(.invalidArguments, message: "CloudKit queries do not support the expression \(expression)")
        }
    }

    private static func unsupported(_ predicate: NSPredicate) -> CKError {
        CKError(.invalidArguments, message: "CloudKit queries do not support the predicate \(predicate.predicateFormat)")
    }
}
#endif
