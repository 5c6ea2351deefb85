/// The domain of every ``CKError`` (`(error as NSError).domain`).
public let CKErrorDomain = "CKErrorDomain"
/// On ``CKError/Code/partialFailure``: a dictionary from each failed item's ID (a
/// `CKRecord.ID`, `CKRecordZone.ID` or subscription ID) to its error.
public let CKPartialErrorsByItemIDKey = "CKPartialErrors"
/// On ``CKError/Code/serverRecordChanged``: the record as the client had it before its changes.
public let CKRecordChangedErrorAncestorRecordKey = "AncestorRecord"
/// On ``CKError/Code/serverRecordChanged``: the server's current record.
public let CKRecordChangedErrorServerRecordKey = "ServerRecord"
/// On ``CKError/Code/serverRecordChanged``: the record the client tried to save.
public let CKRecordChangedErrorClientRecordKey = "ClientRecord"
/// On throttling and busy errors: the seconds to wait before retrying (an `NSNumber`).
public let CKErrorRetryAfterKey = "CKRetryAfter"
