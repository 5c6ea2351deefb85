import Foundation

/// Finds the discoverable users among lookup infos (`users/discover`): CloudKit's
/// `CKDiscoverUserIdentitiesOperation`. ``userIdentityDiscoveredBlock`` for each user found,
/// in the order asked (lookup infos that find no discoverable user are not reported), then
/// ``discoverUserIdentitiesResultBlock`` and the deprecated
/// ``discoverUserIdentitiesCompletionBlock``.
///
/// `@unchecked Sendable`: see ``CKOperation``.
open class CKDiscoverUserIdentitiesOperation: CKOperation, @unchecked Sendable {
    @Protected public var userIdentityLookupInfos: [CKUserIdentity.LookupInfo] = []
    @Protected public var userIdentityDiscoveredBlock:
        (@Sendable (CKUserIdentity, CKUserIdentity.LookupInfo) -> Void)? = nil
    @Protected public var discoverUserIdentitiesResultBlock: (@Sendable (Result<Void, any Error>) -> Void)? = nil
    @Protected public var discoverUserIdentitiesCompletionBlock: (@Sendable ((any Error)?) -> Void)? = nil

    public convenience init(userIdentityLookupInfos: [CKUserIdentity.LookupInfo]) {
        self.init()
        self.userIdentityLookupInfos = userIdentityLookupInfos
    }

    override func execute() async {
        await fetchThenDeliver({ try await targetContainer.discoveredIdentities(userIdentityLookupInfos) }) { found in
            for (identity, lookupInfo) in found { userIdentityDiscoveredBlock?(identity, lookupInfo) }
        }
    }

    override func reportFinal(_ error: CKError?) {
        reportFinal(error, result: discoverUserIdentitiesResultBlock, completion: discoverUserIdentitiesCompletionBlock)
    }
}

/// Finds the discoverable users in the signed-in user's address book: CloudKit's
/// `CKDiscoverAllUserIdentitiesOperation`. A Nimbus server keeps no address books, so it
/// finds no one: ``userIdentityDiscoveredBlock`` is never called, and
/// ``discoverAllUserIdentitiesResultBlock`` reports success (or why the request failed).
///
/// `@unchecked Sendable`: see ``CKOperation``.
open class CKDiscoverAllUserIdentitiesOperation: CKOperation, @unchecked Sendable {
    @Protected public var userIdentityDiscoveredBlock: (@Sendable (CKUserIdentity) -> Void)? = nil
    @Protected public var discoverAllUserIdentitiesResultBlock: (@Sendable (Result<Void, any Error>) -> Void)? = nil
    @Protected public var discoverAllUserIdentitiesCompletionBlock: (@Sendable ((any Error)?) -> Void)? = nil

    override func execute() async {
        await fetchThenDeliver({ try await targetContainer.allDiscoveredIdentities() }) { found in
            for identity in found { userIdentityDiscoveredBlock?(identity) }
        }
    }

    override func reportFinal(_ error: CKError?) {
        reportFinal(error, result: discoverAllUserIdentitiesResultBlock, completion: discoverAllUserIdentitiesCompletionBlock)
    }
}

/// Turns lookup infos into participants to add to a share: CloudKit's
/// `CKFetchShareParticipantsOperation`. ``perShareParticipantResultBlock`` (and the
/// deprecated ``shareParticipantFetchedBlock`` for each success) for each lookup info in
/// order, then ``fetchShareParticipantsResultBlock`` (``CKError/Code/partialFailure`` when
/// some failed) and the deprecated ``fetchShareParticipantsCompletionBlock``.
///
/// An email address gives a participant the server matches to its user when the share is
/// saved and accepted (the owner is not told whether such a user exists); a user record ID
/// names the user; a phone number fails with ``CKError/Code/invalidArguments`` (Nimbus users
/// have none).
///
/// `@unchecked Sendable`: see ``CKOperation``.
open class CKFetchShareParticipantsOperation: CKOperation, @unchecked Sendable {
    @Protected public var userIdentityLookupInfos: [CKUserIdentity.LookupInfo] = []
    @Protected public var perShareParticipantResultBlock:
        (@Sendable (CKUserIdentity.LookupInfo, Result<CKShare.Participant, any Error>) -> Void)? = nil
    @Protected public var shareParticipantFetchedBlock: (@Sendable (CKShare.Participant) -> Void)? = nil
    @Protected public var fetchShareParticipantsResultBlock: (@Sendable (Result<Void, any Error>) -> Void)? = nil
    @Protected public var fetchShareParticipantsCompletionBlock: (@Sendable ((any Error)?) -> Void)? = nil

    public convenience init(userIdentityLookupInfos: [CKUserIdentity.LookupInfo]) {
        self.init()
        self.userIdentityLookupInfos = userIdentityLookupInfos
    }

    override func execute() async {
        let container = targetContainer
        await forEachItem(
            userIdentityLookupInfos, failed: { "\($0) participant(s) could not be made" },
            { try await container.shareParticipant(for: $0) }
        ) { lookupInfo, result in
            perShareParticipantResultBlock?(lookupInfo, result)
            if case .success(let participant) = result { shareParticipantFetchedBlock?(participant) }
        }
    }

    override func reportFinal(_ error: CKError?) {
        reportFinal(error, result: fetchShareParticipantsResultBlock, completion: fetchShareParticipantsCompletionBlock)
    }
}
