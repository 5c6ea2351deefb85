import NimbusProtocol

/// The public key directory of end-to-end encryption (docs/ENCRYPTION.md, "The key
/// directory"): one record per user in the public database, `keys-<user record name>` of type
/// `NimbusUserKeys`, holding the public keys others wrap zone keys to. The server cannot use
/// it to decrypt anything, but it decides who may write it: only the user an entry names.
///
/// Without this rule the public database's default grants (signed-in users create, the
/// creator writes) would let anyone create `keys-<someone else>` first: devices refuse such
/// an entry (its creator is not the user it names), so the squatter could not intercept a
/// key, but the user could never publish theirs and no one could share with them.
public enum KeyDirectoryRules {
    /// The record type of a directory entry.
    public static let recordType = "NimbusUserKeys"
    /// What an entry's record name starts with; the user record name follows.
    public static let namePrefix = "keys-"

    /// Checks a save to the public database by `caller` (a user record name): a record of the
    /// directory's type must be the caller's own entry, and a record named like an entry
    /// (`keys-` and a user record name, which starts with `_`) must be the caller's and of
    /// the directory's type. Deletes are left to the creator-only rule.
    /// - Throws: ACCESS_DENIED naming the record.
    public static func checkSave(of record: Record, scope: DatabaseScope, caller: String) throws(CloudKitError) {
        guard scope == .public else { return }
        let namesAnEntry = record.recordName.hasPrefix(namePrefix + "_")
        guard record.recordType == recordType || namesAnEntry else { return }
        let own = namePrefix + caller
        guard record.recordName == own, record.recordType == recordType else {
            throw CloudKitError(
                .accessDenied,
                "record '\(record.recordName)' (\(record.recordType)): the key directory's entries are written only by "
                    + "the user they name, as '\(own)' of type \(recordType)",
                recordName: record.recordName)
        }
    }
}
