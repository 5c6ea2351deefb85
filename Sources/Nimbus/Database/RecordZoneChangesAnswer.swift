import Foundation
import NimbusProtocol

/// A server's answer to `records/changes`, before its records are read: what
/// ``Database/recordZoneChangesAnswer(inZoneWith:since:desiredKeys:resultsLimit:countingRemaining:)``
/// returns, so that a client can ask for the next page while it reads this one.
public struct RecordZoneChangesAnswer: Sendable {
    private enum Content: Sendable {
        case answer(Data, zoneID: ZoneID, database: Database)
        case page(RecordZoneChanges)
    }

    private let content: Content

    /// The token of the next page, when the answer says more changes are coming and the
    /// token could be found without reading the records (a Nimbus server's answers; `nil`
    /// otherwise, and after the last page).
    ///
    /// A hint: ``read()`` finds the page's own ``RecordZoneChanges/changeToken``, which is what
    /// counts. A page asked for with a hint that differs from it must be dropped.
    public let nextTokenHint: ServerChangeToken?

    init(_ answer: Data, zoneID: ZoneID, database: Database) {
        content = .answer(answer, zoneID: zoneID, database: database)
        nextTokenHint = ChangeFeedPage.nextTokenHint(answer).map(ServerChangeToken.init(rawValue:))
    }

    /// An answer already read (for test doubles of the server and services that do not
    /// split the two steps): its hint is the page's token when more changes are coming.
    public init(_ page: RecordZoneChanges) {
        content = .page(page)
        nextTokenHint = page.moreComing ? page.changeToken : nil
    }

    /// An answer already read with a hint of its own, for tests of a client's read-ahead
    /// (a hint that is not the page's token, as another server's layout could give).
    package init(_ page: RecordZoneChanges, nextTokenHint: ServerChangeToken?) {
        content = .page(page)
        self.nextTokenHint = nextTokenHint
    }

    /// The page: the answer's records read and their encrypted fields opened.
    ///
    /// - Throws: ``NimbusError/Code/malformedResponse`` for an answer that does not read as a
    ///   change feed page; an encryption error for a field that does not open (nothing of the
    ///   page is then usable, and its token must not be stored).
    public func read() async throws -> RecordZoneChanges {
        switch content {
        case .answer(let bytes, let zoneID, let database):
            return try await database.readRecordZoneChanges(bytes, zoneID: zoneID)
        case .page(let page):
            return page
        }
    }
}
