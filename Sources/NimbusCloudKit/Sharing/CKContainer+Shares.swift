import Foundation

extension CKContainer {
    /// Resolves several share URLs, one after the other.
    /// - Returns: each URL's metadata, or the error that says why it did not resolve
    ///   (``CKError/Code/unknownItem`` for a URL that names no share).
    /// - Throws: only when no URL could be tried (no signed-in user, no server configured).
    public func shareMetadatas(for urls: [URL]) async throws -> [URL: Result<CKShare.Metadata, any Error>] {
        _ = try configured()
        var results: [URL: Result<CKShare.Metadata, any Error>] = [:]
        for url in urls {
            do { results[url] = .success(try await shareMetadata(for: url)) } catch { results[url] = .failure(error) }
        }
        return results
    }

    /// Accepts several shares, one after the other (their owners may differ).
    /// - Returns: each metadata's accepted share, or the error that says why it was not
    ///   accepted. Use ``CKAcceptSharesOperation`` for a callback per share in order.
    /// - Throws: only when no share could be tried (no signed-in user, no server configured).
    public func accept(_ metadatas: [CKShare.Metadata]) async throws -> [CKShare.Metadata: Result<CKShare, any Error>] {
        _ = try configured()
        var results: [CKShare.Metadata: Result<CKShare, any Error>] = [:]
        for metadata in metadatas {
            do { results[metadata] = .success(try await accept(metadata)) } catch { results[metadata] = .failure(error) }
        }
        return results
    }

    /// Resolves a share URL, calling `completionHandler` with its metadata or the error.
    public func fetchShareMetadata(
        with url: URL, completionHandler: @escaping @Sendable (CKShare.Metadata?, (any Error)?) -> Void
    ) {
        report(completionHandler) { try await self.shareMetadata(for: url) }
    }

    /// Accepts a share, calling `completionHandler` with the share or the error.
    public func accept(
        _ metadata: CKShare.Metadata, completionHandler: @escaping @Sendable (CKShare?, (any Error)?) -> Void
    ) {
        report(completionHandler) { try await self.accept(metadata) }
    }

    /// Accepts several shares, calling `completionHandler` with each metadata's result, or
    /// with the error that kept every share from being tried.
    public func accept(
        _ metadatas: [CKShare.Metadata],
        completionHandler: @escaping @Sendable (Result<[CKShare.Metadata: Result<CKShare, any Error>], any Error>) -> Void
    ) {
        Task {
            do { completionHandler(.success(try await self.accept(metadatas))) } catch {
                completionHandler(.failure(CKError.wrapping(error)))
            }
        }
    }
}
