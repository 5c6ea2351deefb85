import NimbusProtocol

/// The checks a predicate's values pass before they become filters, so that a predicate
/// that compiles is one the server accepts: numbers are finite (JSON has no NaN or
/// infinity), locations lie on the globe, and a list holds single values of one type
/// (integers mixed with doubles become doubles).
enum PredicateValues {
    static func checked(_ value: FieldValue, column: Int, format: String) throws(PredicateFormatError) -> FieldValue {
        func mismatch(_ reason: String, suggestion: String? = nil) -> PredicateFormatError {
            PredicateFormatError(.typeMismatch, column: column, reason: reason, suggestion: suggestion, format: format)
        }
        switch value {
        case .double(let number):
            guard number.isFinite else { throw mismatch("\(number) is not a finite number; CloudKit stores no NaN or infinity") }
            return value
        case .location(let location):
            let numbers = [
                location.latitude, location.longitude, location.horizontalAccuracy, location.verticalAccuracy,
                location.altitude, location.speed, location.course,
            ]
            guard numbers.allSatisfy({ $0?.isFinite ?? true }), (-90...90).contains(location.latitude),
                (-180...180).contains(location.longitude)
            else {
                throw mismatch("a location needs finite numbers, latitude within ±90 and longitude within ±180")
            }
            return value
        case .list(let elementType, let members):
            var checked: [FieldValue] = []
            for member in members {
                if case .list = member {
                    throw mismatch("a list holds single values, not a list of lists", suggestion: "flatten the array")
                }
                checked.append(try Self.checked(member, column: column, format: format))
            }
            let types = Set(checked.map(\.type))
            if types == [.int64, .double] {
                return .list(elementType: .double, checked.map { $0.int64Value.map { .double(Double($0)) } ?? $0 })
            }
            guard types.count <= 1 else {
                throw mismatch(
                    "a list holds values of one type, not \(types.map(\.rawValue).sorted().joined(separator: " and "))")
            }
            guard let first = checked.first else {
                guard !elementType.isList else { throw mismatch("a list holds single values, not a list of lists") }
                return value
            }
            return .list(elementType: first.type, checked)
        case .string, .int64, .timestamp, .bytes, .encryptedBytes, .reference, .asset:
            return value
        }
    }
}
