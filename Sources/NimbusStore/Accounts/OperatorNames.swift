/// The rule for operator names, the same on every engine.
public enum OperatorNames {
    /// 1 to 64 letters, digits, `.`, `-`, `_` or `@`.
    public static func check(_ name: String) throws {
        guard !name.isEmpty, name.count <= 64, name.allSatisfy({ $0.isLetter || $0.isNumber || ".-_@".contains($0) })
        else {
            throw AccountError("an operator name is 1 to 64 letters, digits, '.', '-', '_' or '@'")
        }
    }
}
