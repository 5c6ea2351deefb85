import NimbusProtocol

/// How one field is resolved when the device and the server both changed it since the
/// ancestor (the last server copy the device saw).
public enum FieldMergePolicy: Sendable, Hashable {
    /// The server's value wins.
    case serverWins
    /// The device's value wins.
    case clientWins
    /// The side whose `timestampField` (a TIMESTAMP or INT64 field the app sets on every user
    /// edit) is later wins; ties go to the server.
    case latestEdit(timestampField: String)
    /// For lists: the union, keeping the server's order and appending the device's new
    /// elements; elements either side removed since the ancestor stay removed.
    case union
    /// For INT64/DOUBLE counters: both sides' increments are kept
    /// (`server + (client - ancestor)`).
    case counter
}

/// The merge rules of one record type: a policy per field and one for the rest.
public struct MergeRules: Sendable {
    public var fields: [String: FieldMergePolicy]
    /// Used for fields without their own policy. The default, ``FieldMergePolicy/clientWins``,
    /// keeps the user's latest intent on this device; fields only one side changed are
    /// always merged without conflict whatever the policy.
    public var defaultPolicy: FieldMergePolicy

    public init(fields: [String: FieldMergePolicy] = [:], defaultPolicy: FieldMergePolicy = .clientWins) {
        self.fields = fields
        self.defaultPolicy = defaultPolicy
    }

    public func policy(for field: String) -> FieldMergePolicy { fields[field] ?? defaultPolicy }
}
