/// How a save treats changes made on the server since the record was fetched.
///
/// | policy | operation sent | fields sent | change tag checked |
/// |---|---|---|---|
/// | ``ifServerRecordUnchanged`` | `create` (new record), `update`, or `replace` when keys were removed | changed keys (all for `replace`) | yes |
/// | ``changedKeys`` | `forceUpdate`, or `forceReplace` when keys were removed | changed keys (all for `forceReplace`) | no |
/// | ``allKeys`` | `forceReplace` | all keys | no |
///
/// CloudKit Web Services has no way to remove a single field in an `update`, so a save that
/// removes keys sends the whole record; under ``changedKeys`` that overwrites keys other
/// devices changed in the meantime.
public enum SavePolicy: Sendable, Hashable, CaseIterable {
    /// Save only if the server's record still has the change tag this record carries;
    /// otherwise fail with ``NimbusError/Code/serverRecordChanged`` (the safe default).
    case ifServerRecordUnchanged
    /// Send the changed keys whatever the server has; other keys on the server are kept.
    case changedKeys
    /// Make the server's record exactly this record.
    case allKeys
}
