/// The provisioning rules and their messages, the same on every engine: an engine checks
/// nothing of its own and words no refusal itself.
public enum AccountRules {
    /// A container identifier: letters, digits, `.`, `-` and `_`, at least one.
    public static func checkContainerIdentifier(_ identifier: String) throws {
        guard !identifier.isEmpty, identifier.allSatisfy({ $0.isLetter || $0.isNumber || ".-_".contains($0) }) else {
            throw AccountError("a container identifier uses letters, digits, '.', '-' and '_' (e.g. iCloud.com.example.app)")
        }
    }

    /// A user's account name: not empty.
    public static func checkUserName(_ name: String) throws {
        guard !name.isEmpty else { throw AccountError("a user needs a name") }
    }
}

extension AccountError {
    /// `createContainer` of an identifier that exists.
    public static func containerExists(_ identifier: String) -> AccountError {
        AccountError(
            "container \(identifier) already exists; use `nimbus token create --container \(identifier)` for another API token")
    }

    /// A container that was never created.
    public static func noContainer(_ container: String) -> AccountError {
        AccountError("no container \(container); create it with `nimbus container create \(container)`")
    }

    /// A user name no user has.
    public static func noUser(_ userName: String) -> AccountError { AccountError("no user \(userName)") }

    /// `createOperator` of a name that exists.
    public static func operatorExists(_ name: String) -> AccountError {
        AccountError("operator \(name) already exists; `nimbus operator password \(name)` sets a new password")
    }

    /// `addServerKey` of a key ID that exists.
    public static func serverKeyExists(_ keyID: String) -> AccountError {
        AccountError("a server-to-server key with ID \(keyID) already exists")
    }
}
