/// Limits of the protocol, as CloudKit sets them: the server refuses requests over them with
/// `LIMIT_EXCEEDED`, and clients split their work to stay within them.
///
/// Apple documents two figures for items per request: CloudKit Web Services' "Data Size
/// Limits" (200 operations per request, 200 records per response) and the CloudKit
/// framework's `CKError.Code.limitExceeded` (400 items per operation). `records/modify` takes
/// the framework's 400, so that an atomic `CKModifyRecordsOperation` CloudKit accepts is one
/// request here too; a Web Services client that keeps to 200 is unaffected.
public enum ProtocolLimits {
    /// Operations per `records/modify` (CloudKit's 400 items per operation).
    public static let maxRecordOperations = 400
    /// Operations per `zones/modify` and other requests, names per lookup.
    public static let maxOperations = 200
    /// Records per response page.
    public static let maxResults = 200
    /// Bytes of one record's fields.
    public static let maxRecordBytes = 1 << 20
}
