import NimbusProtocol

/// Granting and revoking a schema's security roles (`CREATE ROLE editors;`) to users, per
/// container environment, as CloudKit's console does on user records: what `nimbus role` and
/// the dashboard do, over any ``SchemaStore``. Only operators reach it (the CLI on the data,
/// the dashboard behind its sign-in); no CloudKit request changes who holds a role.
///
/// The holders live in the environment's schema document (``ContainerSchema/roleMembers``):
/// a change advances the schema's version, so every server node applies it from its next
/// request, and the public database's permissions (``PublicAccess``) check it inside each
/// write's transaction as they check the grants.
public enum RoleAssignments {
    /// Grants `role` to (or, with `granted` false, revokes it from) the user with
    /// `userRecordName` in a container environment.
    /// - Returns: whether anything changed (granting a role the user holds changes nothing).
    /// - Throws: BAD_REQUEST when the environment's schema does not declare `role` (the
    ///   built-in `_world`, `_icloud` and `_creator` are never granted to users).
    @discardableResult
    public static func set(
        _ granted: Bool, role: String, userRecordName: String, container: String, environment: ContainerEnvironment,
        in store: any SchemaStore
    ) async throws -> Bool {
        guard !userRecordName.isEmpty, !userRecordName.contains("\""), !userRecordName.contains("\n") else {
            throw CloudKitError.badRequest("'\(userRecordName)' is not a user record name")
        }
        for _ in 0..<10 {
            let current = try await store.schema(container: container, environment: environment)
            var schema = current.schema
            guard schema.roles.contains(role) else { throw undeclared(role, container: container, environment: environment) }
            var holders = schema.roleMembers[role] ?? []
            let changed = granted ? holders.insert(userRecordName).inserted : holders.remove(userRecordName) != nil
            guard changed else { return false }
            schema.roleMembers[role] = holders.isEmpty ? nil : holders
            do {
                _ = try await store.updateSchema(
                    schema, container: container, environment: environment, expectedVersion: current.version)
                return true
            } catch let error as CloudKitError where error.code == .conflict {
                continue
            }
        }
        throw CloudKitError(.tryAgainLater, "the \(environment.rawValue) schema of \(container) kept changing; try again")
    }

    /// The roles `userRecordName` holds in a schema, sorted.
    public static func roles(of userRecordName: String, in schema: ContainerSchema) -> [String] {
        schema.roles.filter { schema.roleMembers[$0]?.contains(userRecordName) == true }.sorted()
    }

    static func undeclared(_ role: String, container: String, environment: ContainerEnvironment) -> CloudKitError {
        if role.hasPrefix("_") {
            return .badRequest(
                "'\(role)' is a built-in role (_world: everyone, _icloud: signed-in users, _creator: a record's creator); "
                    + "it is not granted to users")
        }
        return .badRequest(
            "the \(environment.rawValue) schema of \(container) declares no role '\(role)'; "
                + (environment == .development
                    ? "add `CREATE ROLE \(role);` to it" : "declare it in development and deploy the schema"))
    }
}
