import NimbusProtocol
import NimbusStore

extension APICall {
    /// A record dictionary with its reserved fields (``SystemFields``) lifted out of `fields`:
    /// `parent` and `share` as reference dictionaries, and a share record's state as the
    /// members CloudKit gives shares, as this caller sees them.
    func liftingSystemFields(_ json: JSON) -> JSON {
        guard case .object(var members) = json, case .object(var fields)? = members["fields"] else { return json }
        guard fields.keys.contains(where: { SystemFields.hidden.contains($0) }) else { return json }
        if let parent = fields.removeValue(forKey: SystemFields.parent)?.object?["value"] {
            members["parent"] = parent
        }
        if let share = fields.removeValue(forKey: SystemFields.share)?.object?["value"] {
            members["share"] = share
        }
        fields.removeValue(forKey: SystemFields.root)
        if let text = fields.removeValue(forKey: SystemFields.shareState)?.object?["value"]?.string,
            let state = ShareState(storedText: text)
        {
            members.merge(state.wireMembers(
                    viewer: identity.caller?.userRecordName, origin: origin, container: identity.container,
                    environment: identity.environment)) { _, new in new }
        }
        members["fields"] = .object(fields)
        return .object(members)
    }

    /// The fields a `desiredKeys` selection must keep so that the system fields can be lifted.
    static func withSystemFields(_ desiredKeys: Set<String>?) -> Set<String>? {
        desiredKeys.map { $0.union(SystemFields.hidden) }
    }
}
