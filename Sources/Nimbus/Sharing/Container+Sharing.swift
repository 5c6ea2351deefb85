import Foundation
import NimbusProtocol

extension Container {
    /// What the share at `url` shows a prospective participant (`records/resolve`). Changes
    /// nothing.
    ///
    /// ```swift
    /// let metadata = try await container.shareMetadata(for: url, shouldFetchRootRecord: true)
    /// albumTitle = metadata.share.title
    /// ```
    ///
    /// - Parameters:
    ///   - url: the share's ``Share/url`` (`{server}/share/{container}/{environment}/{shortGUID}`;
    ///     the short GUID is its last path component).
    ///   - shouldFetchRootRecord: include the root record (when the caller may read it).
    /// - Throws: ``NimbusError/Code/unknownItem`` when no share with this URL is open to the
    ///   signed-in user (it does not exist, or it is private and they are not invited).
    public func shareMetadata(for url: URL, shouldFetchRootRecord: Bool = false) async throws -> Share.Metadata {
        try await shareMetadata(forShortGUID: Self.shortGUID(of: url), shouldFetchRootRecord: shouldFetchRootRecord)
    }

    /// What the share with `shortGUID` shows a prospective participant (`records/resolve`).
    ///
    /// ```swift
    /// let metadata = try await container.shareMetadata(forShortGUID: "mB3xV0…")
    /// ```
    public func shareMetadata(forShortGUID shortGUID: String, shouldFetchRootRecord: Bool = false) async throws
        -> Share.Metadata
    {
        try await shareOperation("records/resolve", shortGUID: shortGUID, shouldFetchRootRecord: shouldFetchRootRecord)
    }

    /// Accepts a share (`records/accept`): the signed-in user becomes an accepted participant
    /// (invited, or joining a share with a ``Share/publicPermission``) and reads the shared
    /// records in ``sharedCloudDatabase`` under ``Share/Metadata/zoneID``.
    ///
    /// ```swift
    /// let metadata = try await container.shareMetadata(for: url)
    /// let accepted = try await container.accept(metadata)
    /// let changes = try await container.sharedCloudDatabase
    ///     .recordZoneChanges(inZoneWith: accepted.zoneID, since: nil)
    /// ```
    ///
    /// - Returns: the metadata as it is after accepting.
    /// - Throws: ``NimbusError/Code/unknownItem`` when the share is not open to the user.
    @discardableResult
    public func accept(_ metadata: Share.Metadata) async throws -> Share.Metadata {
        try await accept(shortGUID: metadata.shortGUID)
    }

    /// Accepts the share with `shortGUID` (`records/accept`) without resolving it first.
    @discardableResult
    public func accept(shortGUID: String) async throws -> Share.Metadata {
        try await shareOperation("records/accept", shortGUID: shortGUID, shouldFetchRootRecord: false)
    }

    /// Leaves a share the signed-in user takes part in: deletes the share record in
    /// ``sharedCloudDatabase``, which removes the user from it (CloudKit's rule). The shared
    /// zone then reads as deleted in the user's shared database.
    ///
    /// ```swift
    /// try await container.leave(metadata.share)
    /// ```
    public func leave(_ share: Share) async throws {
        try await sharedCloudDatabase.deleteRecord(withID: share.id)
    }

    private func shareOperation(_ operation: String, shortGUID: String, shouldFetchRootRecord: Bool) async throws
        -> Share.Metadata
    {
        let body: JSON = .object([
            "shortGUIDs": .array([
                .object(["value": .string(shortGUID), "shouldFetchRootRecord": .bool(shouldFetchRootRecord)])
            ])
        ])
        let response = try await publicCloudDatabase.send(operation, body: body)
        let results = try Database.items(response, "results", count: 1)
        return try Share.Metadata(wire: results[0])
    }

    /// The short GUID of a share URL: its last path component.
    static func shortGUID(of url: URL) throws -> String {
        let last = url.lastPathComponent
        guard !last.isEmpty, last != "/" else {
            throw NimbusError(.invalidArguments, "\(url) is not a share URL (no short GUID at its end)")
        }
        return last
    }
}
