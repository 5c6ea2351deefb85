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
/// On ``CKError/Code/zoneNotFound``: `true` (an `NSNumber`) when the zone is gone because the
/// user reset their encrypted data (``Nimbus/EncryptionKeys/resetEncryptedData(in:)`` on one of
/// their devices); re-upload what this device still has into a new zone.
public let CKErrorUserDidResetEncryptedDataKey = "CKErrorUserDidResetEncryptedDataKey"
