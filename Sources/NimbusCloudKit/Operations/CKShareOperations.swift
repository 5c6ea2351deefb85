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
        let container = configuration?.container ?? CKContainer.default()
        var failures = 0
        for url in shareURLs ?? [] {
            if let cancelled = cancellationError {
                finishReporting(cancelled)
                return
            }
            do {
                perShareMetadataResultBlock?(url, .success(try await container.shareMetadata(for: url, shouldFetchRootRecord: shouldFetchRootRecord)))
            } catch {
                failures += 1
                perShareMetadataResultBlock?(url, .failure(CKError.wrapping(error)))
            }
        }
        finishReporting(
            cancellationError
                ?? (failures == 0 ? nil : CKError(.partialFailure, message: "\(failures) share URL(s) did not resolve")))
    }

    override func reportFinal(_ error: CKError?) {
        fetchShareMetadataResultBlock?(error.map { .failure($0) } ?? .success(()))
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
        let container = configuration?.container ?? CKContainer.default()
        var failures = 0
        for metadata in shareMetadatas ?? [] {
            if let cancelled = cancellationError {
                finishReporting(cancelled)
                return
            }
            do {
                perShareResultBlock?(metadata, .success(try await container.accept(metadata)))
            } catch {
                failures += 1
                perShareResultBlock?(metadata, .failure(CKError.wrapping(error)))
            }
        }
        finishReporting(
            cancellationError ?? (failures == 0 ? nil : CKError(.partialFailure, message: "\(failures) share(s) were not accepted")))
    }

    override func reportFinal(_ error: CKError?) {
        acceptSharesResultBlock?(error.map { .failure($0) } ?? .success(()))
    }
}
