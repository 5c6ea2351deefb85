import NimbusProtocol

/// Who may read, create and write the records of each type in the public database: the
/// schema's grants (``Grant``, `GRANT READ, CREATE, WRITE TO role` in the schema file),
/// applied to a caller.
///
/// Roles:
/// - `_world`: everyone, signed in or not;
/// - `_icloud`: every signed-in user;
/// - `_creator`: the record's creator (for READ and WRITE; it grants no CREATE);
/// - a role the schema declares (`CREATE ROLE editors;`): the users an operator granted it to
///   in the environment (``ContainerSchema/roleMembers``, ``RoleAssignments``);
/// - the admin role, a server-to-server key: everything, whatever the grants.
///
/// WRITE (changing and deleting a record) includes READ. A record type the schema does not
/// have yet (a development save creates it) has ``Grant/defaults``: everyone reads,
/// signed-in users create, the creator writes.
public struct PublicAccess: Sendable, Hashable {
    /// Who asks.
    public enum Accessor: Sendable, Hashable {
        /// API token only: nobody signed in.
        case anonymous
        /// A signed-in user, by user record name.
        case user(String)
        /// A server-to-server key: the container's administrator.
        case admin
    }

    /// The grants of each record type the schema has.
    public var grantsByType: [String: [Grant]]
    /// The user record names holding each declared role.
    public var roleMembers: [String: Set<String>]

    public init(grantsByType: [String: [Grant]], roleMembers: [String: Set<String>] = [:]) {
        self.grantsByType = grantsByType
        self.roleMembers = roleMembers
    }

    /// The grants of a schema's record types and who holds its roles.
    public init(schema: ContainerSchema) {
        self.init(grantsByType: schema.recordTypes.mapValues(\.grants), roleMembers: schema.roleMembers)
    }

    /// The grants of a record type.
    public func grants(of recordType: String) -> [Grant] {
        grantsByType[recordType] ?? Grant.defaults
    }

    /// Whether `accessor` may `permission` a record of `recordType` created by `creator`
    /// (`nil`: a record yet to be created, or "whoever created it").
    public func allows(
        _ permission: Grant.Permission, _ recordType: String, creator: String?, accessor: Accessor
    ) -> Bool {
        if accessor == .admin { return true }
        let sufficient: Set<Grant.Permission> = permission == .read ? [.read, .write] : [permission]
        return grants(of: recordType).contains { grant in
            guard sufficient.contains(grant.permission) else { return false }
            switch (grant.role, accessor) {
            case ("_world", _): return true
            case ("_icloud", .user): return true
            case ("_creator", .user(let name)): return permission != .create && creator != nil && creator == name
            case (let role, .user(let name)) where !role.hasPrefix("_"): return roleMembers[role]?.contains(name) == true
            default: return false
            }
        }
    }

    /// Whether some records of the type are readable only by their creators for `accessor`:
    /// READ (or WRITE) goes to `_creator` but not to a role the accessor holds.
    public func readsOnlyOwnRecords(_ recordType: String, accessor: Accessor) -> Bool {
        !allows(.read, recordType, creator: nil, accessor: accessor)
            && grants(of: recordType).contains { $0.role == "_creator" && $0.permission != .create }
    }

    /// ACCESS_DENIED for `permission` on a record (or, without a name, the records) of
    /// `recordType`, saying who holds the permission.
    public func denial(
        _ permission: Grant.Permission, _ recordType: String, recordName: String? = nil, accessor: Accessor
    ) -> CloudKitError {
        let sufficient: Set<Grant.Permission> = permission == .read ? [.read, .write] : [permission]
        var holders: [String] = []
        for grant in grants(of: recordType) where sufficient.contains(grant.permission) {
            let holder: String
            switch grant.role {
            case "_world": holder = "_world (everyone)"
            case "_icloud": holder = "_icloud (signed-in users)"
            case "_creator" where permission == .create: continue
            case "_creator": holder = "_creator (the record's creator)"
            default:
                holder =
                    roleMembers[grant.role]?.isEmpty == false
                    ? "\(grant.role) (the users an operator granted it to)" : "\(grant.role) (no user holds it)"
            }
            if !holders.contains(holder) { holders.append(holder) }
        }
        let action: String
        switch permission {
        case .read: action = "reading"
        case .create: action = "creating"
        case .write: action = "changing or deleting"
        }
        let who: String
        switch accessor {
        case .anonymous: who = "a caller who is not signed in"
        case .user: who = "this user"
        case .admin: who = "the admin"
        }
        let target = recordName.map { "record '\($0)' of type '\(recordType)'" } ?? "records of type '\(recordType)'"
        return CloudKitError(
            .accessDenied,
            "\(action) \(target) in the public database needs \(permission.rawValue), which the schema grants to "
                + (holders.isEmpty ? "no role" : holders.joined(separator: ", "))
                + "; \(who) holds none of them (a server-to-server key may do everything)",
            recordName: recordName)
    }
}
