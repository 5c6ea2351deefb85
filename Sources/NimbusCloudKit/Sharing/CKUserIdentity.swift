import Foundation
import Nimbus
import NimbusProtocol

/// A user as others see them: record ID, how they were looked up, their name.
public final class CKUserIdentity: NSObject, NSCopying, Sendable {
    /// How a user is found: an email address, a phone number or a user record ID.
    public final class LookupInfo: NSObject, NSCopying, Sendable {
        public let emailAddress: String?
        public let phoneNumber: String?
        public let userRecordID: CKRecord.ID?

        public init(emailAddress: String) {
            self.emailAddress = emailAddress
            self.phoneNumber = nil
            self.userRecordID = nil
        }

        public init(phoneNumber: String) {
            self.emailAddress = nil
            self.phoneNumber = phoneNumber
            self.userRecordID = nil
        }

        public init(userRecordID: CKRecord.ID) {
            self.emailAddress = nil
            self.phoneNumber = nil
            self.userRecordID = userRecordID
        }

        init(_ info: UserIdentity.LookupInfo) {
            self.emailAddress = info.emailAddress
            self.phoneNumber = info.phoneNumber
            self.userRecordID = info.userRecordID.map(CKRecord.ID.init)
        }

        var nimbus: UserIdentity.LookupInfo {
            if let userRecordID { return UserIdentity.LookupInfo(userRecordID: userRecordID.nimbus) }
            if let phoneNumber { return UserIdentity.LookupInfo(phoneNumber: phoneNumber) }
            return UserIdentity.LookupInfo(emailAddress: emailAddress ?? "")
        }

        public func copy(with zone: NSZone? = nil) -> Any { self }
    }

    public let userRecordID: CKRecord.ID?
    public let lookupInfo: LookupInfo?
    public let nameComponents: PersonNameComponents?
    public let hasiCloudAccount: Bool
    /// Always empty: Nimbus has no address book.
    public let contactIdentifiers: [String] = []

    init(_ identity: UserIdentity) {
        self.userRecordID = identity.userRecordID.map(CKRecord.ID.init)
        self.lookupInfo = identity.lookupInfo.map(LookupInfo.init)
        self.nameComponents = identity.nameComponents
        self.hasiCloudAccount = identity.hasiCloudAccount
    }

    public func copy(with zone: NSZone? = nil) -> Any { self }
}
