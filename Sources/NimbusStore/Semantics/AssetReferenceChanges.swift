extension AssetReferences {
    /// The records whose asset references a modify replaces, each with the hashes its final
    /// row references: every record whose JSON before or after one of `changes` mentions an
    /// asset (only those are parsed). A record can change twice in one plan (saved, then
    /// tombstoned by a cascade); its last row decides. Every engine replaces the references
    /// of these records, and measures its asset usage over their old and new hashes.
    public static func replacements(in changes: [(before: StoredRecord?, after: StoredRecord)]) -> [String: Set<String>] {
        var cleared = Set<String>()
        for (before, after) in changes {
            if let before, mentioned(in: before.fieldsJSON) { cleared.insert(after.recordName) }
            if mentioned(in: after.fieldsJSON) { cleared.insert(after.recordName) }
        }
        guard !cleared.isEmpty else { return [:] }
        var final: [String: StoredRecord] = [:]
        for (_, after) in changes where cleared.contains(after.recordName) { final[after.recordName] = after }
        var replacements: [String: Set<String>] = [:]
        for name in cleared { replacements[name] = final[name].map(hashes(of:)) ?? [] }
        return replacements
    }
}
