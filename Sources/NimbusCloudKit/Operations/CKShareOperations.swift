import Foundation

/// Resolves share URLs: CloudKit's `CKFetchShareMetadataOperation`.
/// ``perShareMetadataResultBlock`` for each URL in order, then ``fetchShareMetadataResultBlock``.
///
/// `@unchecked Sendable`: see ``CKOperation``.
open class CKFetchShareMetadataOperation: CKOperation, @unchecked Sendable {
    @Protected public var shareURLs: [URL]? = nil
    @Protected public var shouldFetchRootRecord: Bool = false
    @Protected public var perShareMetadataResultBlock: (@Sendable (URL, Result<CKShare.Metadata, any Error>) -> Void)? = nil
    @Protected public var fetchShareMetadataResultBlock: (@Sendable (Result<Void, any Error>) -> Void)? = nil

    public override init() {
        super.init()
    }

    public convenience init(shareURLs: [URL]) {
        self.init()
        self.shareURLs = shareURLs
    }

    override func execute() async {
        let container = targetContainer
        let rootRecord = shouldFetchRootRecord
        await forEachItem(
            shareURLs ?? [], failed: { "\($0) share URL(s) did not resolve" },
            { try await container.shareMetadata(for: $0, shouldFetchRootRecord: rootRecord) }
        ) { url, result in
            perShareMetadataResultBlock?(url, result)
        }
    }

    override func reportFinal(_ error: CKError?) {
        reportFinal(error, result: fetchShareMetadataResultBlock)
    }
}

/// Accepts shares: CloudKit's `CKAcceptSharesOperation`. ``perShareResultBlock`` for each
/// metadata in order, then ``acceptSharesResultBlock``.
///
/// `@unchecked Sendable`: see ``CKOperation``.
open class CKAcceptSharesOperation: CKOperation, @unchecked Sendable {
    @Protected public var shareMetadatas: [CKShare.Metadata]? = nil
    @Protected public var perShareResultBlock: (@Sendable (CKShare.Metadata, Result<CKShare, any Error>) -> Void)? = nil
    @Protected public var acceptSharesResultBlock: (@Sendable (Result<Void, any Error>) -> Void)? = nil

    public override init() {
        super.init()
    }

    public convenience init(shareMetadatas: [CKShare.Metadata]) {
        self.init()
        self.shareMetadatas = shareMetadatas
    }

    override func execute() async {
        let container = targetContainer
        await forEachItem(
            shareMetadatas ?? [], failed: { "\($0) share(s) were not accepted" }, { try await container.accept($0) }
        ) { metadata, result in
            perShareResultBlock?(metadata, result)
        }
    }

    override func reportFinal(_ error: CKError?) {
        reportFinal(error, result: acceptSharesResultBlock)
    }
}
