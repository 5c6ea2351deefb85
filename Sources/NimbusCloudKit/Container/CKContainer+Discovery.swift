import Foundation
import Nimbus

/// User discovery: the signed-in user's consent to be found, lookups of other users who
/// consented, and share participants.
///
/// A Nimbus server finds only users who opted in to discovery in the container
/// (``requestApplicationPermission(_:)`` with ``ApplicationPermissions/userDiscoverability``),
/// never says whether an address it does not find belongs to anyone, and keeps no address
/// books: ``discoverAllIdentities(completionHandler:)`` finds no one. Nimbus users have no
/// phone numbers, so a phone number finds no one either.
extension CKContainer {
    /// Permissions a user grants the app (CloudKit's `CKContainer.ApplicationPermissions`).
    public struct ApplicationPermissions: OptionSet, Sendable, Hashable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }

        /// Other users of the container may find this user by email address or user record ID.
        public static let userDiscoverability = ApplicationPermissions(rawValue: 1 << 0)

        var nimbus: Nimbus.ApplicationPermissions { Nimbus.ApplicationPermissions(rawValue: Int(rawValue)) }
    }

    /// Whether the user granted a permission (CloudKit's `CKContainer.ApplicationPermissionStatus`).
    public enum ApplicationPermissionStatus: Int, Sendable, Hashable {
        /// Not granted yet (never asked, or withdrawn).
        case initialState = 0
        /// The server could not answer.
        case couldNotComplete = 1
        /// The user refused.
        case denied = 2
        case granted = 3

        init(_ status: Nimbus.ApplicationPermissionStatus) {
            switch status {
            case .initialState: self = .initialState
            case .couldNotComplete: self = .couldNotComplete
            case .denied: self = .denied
            case .granted: self = .granted
            }
        }
    }

    public typealias ApplicationPermissionBlock = @Sendable (ApplicationPermissionStatus, (any Error)?) -> Void

    // MARK: - Permission

    /// Grants the permission for the signed-in user: with
    /// ``ApplicationPermissions/userDiscoverability`` they become discoverable in this
    /// container. CloudKit asks the user in a system dialog; ask in the app before calling this.
    /// - Returns: ``ApplicationPermissionStatus/granted``.
    public func requestApplicationPermission(
        _ applicationPermission: ApplicationPermissions
    ) async throws -> ApplicationPermissionStatus {
        let container = try configured()
        return try await mappingErrors {
            ApplicationPermissionStatus(try await container.requestApplicationPermission(applicationPermission.nimbus))
        }
    }

    public func requestApplicationPermission(
        _ applicationPermission: ApplicationPermissions, completionHandler: @escaping ApplicationPermissionBlock
    ) {
        reportPermission(completionHandler) { try await self.requestApplicationPermission(applicationPermission) }
    }

    /// Whether the signed-in user granted the permission.
    public func applicationPermissionStatus(
        for applicationPermission: ApplicationPermissions
    ) async throws -> ApplicationPermissionStatus {
        let container = try configured()
        return try await mappingErrors {
            ApplicationPermissionStatus(try await container.applicationPermissionStatus(for: applicationPermission.nimbus))
        }
    }

    public func status(
        forApplicationPermission applicationPermission: ApplicationPermissions,
        completionHandler: @escaping ApplicationPermissionBlock
    ) {
        reportPermission(completionHandler) { try await self.applicationPermissionStatus(for: applicationPermission) }
    }

    private func reportPermission(
        _ completionHandler: @escaping ApplicationPermissionBlock,
        _ work: @escaping @Sendable () async throws -> ApplicationPermissionStatus
    ) {
        Task {
            do { completionHandler(try await work(), nil) } catch { completionHandler(.couldNotComplete, error) }
        }
    }

    // MARK: - Lookups

    /// A discoverable user, by phone number: always `nil` on Nimbus, whose users have none.
    public func userIdentity(forPhoneNumber phoneNumber: String) async throws -> CKUserIdentity? {
        try await discoveredIdentities([CKUserIdentity.LookupInfo(phoneNumber: phoneNumber)]).first?.identity
    }

    /// The discoverable users among `lookupInfos` (`users/discover`), each with the lookup
    /// info (as given) that found it, in the order asked.
    func discoveredIdentities(
        _ lookupInfos: [CKUserIdentity.LookupInfo]
    ) async throws -> [(identity: CKUserIdentity, lookupInfo: CKUserIdentity.LookupInfo)] {
        let container = try configured()
        let found = try await mappingErrors { try await container.discoverUserIdentities(lookupInfos.map(\.nimbus)) }
        return found.compactMap { identity in
            guard
                let info = lookupInfos.first(where: { $0.nimbus == identity.lookupInfo })
                    ?? identity.lookupInfo.map(CKUserIdentity.LookupInfo.init)
            else { return nil }
            return (CKUserIdentity(identity), info)
        }
    }

    /// The discoverable users in the signed-in user's address book: none on Nimbus, which
    /// keeps no address books.
    func allDiscoveredIdentities() async throws -> [CKUserIdentity] {
        let container = try configured()
        return try await mappingErrors { try await container.discoverAllUserIdentities().map(CKUserIdentity.init) }
    }

    public func discoverUserIdentity(
        withEmailAddress email: String, completionHandler: @escaping @Sendable (CKUserIdentity?, (any Error)?) -> Void
    ) {
        report(completionHandler) { try await self.userIdentity(forEmailAddress: email) }
    }

    public func discoverUserIdentity(
        withPhoneNumber phoneNumber: String, completionHandler: @escaping @Sendable (CKUserIdentity?, (any Error)?) -> Void
    ) {
        report(completionHandler) { try await self.userIdentity(forPhoneNumber: phoneNumber) }
    }

    public func discoverUserIdentity(
        withUserRecordID userRecordID: CKRecord.ID,
        completionHandler: @escaping @Sendable (CKUserIdentity?, (any Error)?) -> Void
    ) {
        report(completionHandler) { try await self.userIdentity(forUserRecordID: userRecordID) }
    }

    /// The discoverable users in the signed-in user's address book: an empty list on Nimbus.
    public func discoverAllIdentities(completionHandler: @escaping @Sendable ([CKUserIdentity]?, (any Error)?) -> Void) {
        report(completionHandler) { try await self.allDiscoveredIdentities() }
    }

    // MARK: - Share participants

    /// A participant to invite by phone number: Nimbus users have none, so this fails with
    /// ``CKError/Code/invalidArguments``; invite by email address or user record ID.
    public func shareParticipant(forPhoneNumber phoneNumber: String) async throws -> CKShare.Participant {
        try await shareParticipant(for: CKUserIdentity.LookupInfo(phoneNumber: phoneNumber))
    }

    /// The participant a lookup info stands for. An email address becomes a participant
    /// the server matches to its user when the share is saved and accepted (the owner is not
    /// told whether such a user exists); a user record ID names the user.
    func shareParticipant(for lookupInfo: CKUserIdentity.LookupInfo) async throws -> CKShare.Participant {
        _ = try configured()
        if let userRecordID = lookupInfo.userRecordID { return try await shareParticipant(forUserRecordID: userRecordID) }
        if let emailAddress = lookupInfo.emailAddress { return try await shareParticipant(forEmailAddress: emailAddress) }
        throw CKError(
            .invalidArguments,
            message: "Nimbus users have no phone numbers: invite a participant by email address or user record ID")
    }

    public func fetchShareParticipant(
        withEmailAddress emailAddress: String,
        completionHandler: @escaping @Sendable (CKShare.Participant?, (any Error)?) -> Void
    ) {
        report(completionHandler) { try await self.shareParticipant(forEmailAddress: emailAddress) }
    }

    public func fetchShareParticipant(
        withPhoneNumber phoneNumber: String,
        completionHandler: @escaping @Sendable (CKShare.Participant?, (any Error)?) -> Void
    ) {
        report(completionHandler) { try await self.shareParticipant(forPhoneNumber: phoneNumber) }
    }

    public func fetchShareParticipant(
        withUserRecordID userRecordID: CKRecord.ID,
        completionHandler: @escaping @Sendable (CKShare.Participant?, (any Error)?) -> Void
    ) {
        report(completionHandler) { try await self.shareParticipant(forUserRecordID: userRecordID) }
    }

    /// Runs `work` and calls a completion handler with its value, or with its error as a
    /// ``CKError``.
    func report<T: Sendable>(
        _ completionHandler: @escaping @Sendable (T?, (any Error)?) -> Void, _ work: @escaping @Sendable () async throws -> T?
    ) {
        Task {
            do { completionHandler(try await work(), nil) } catch { completionHandler(nil, CKError.wrapping(error)) }
        }
    }
}
