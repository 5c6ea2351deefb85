import Foundation
import NimbusProtocol

/// One page of a zone's record changes since a token.
public struct RecordZoneChanges: Sendable {
    /// A record deleted since the token.
    public struct Deletion: Sendable, Hashable {
        public var recordID: Record.ID
        /// The deleted record's type, when the server sent it.
        public var recordType: String?

        /// A deletion (for test doubles of the server).
        public init(recordID: Record.ID, recordType: String? = nil) {
            self.recordID = recordID
            self.recordType = recordType
        }
    }

    /// The latest state of each record changed since the token.
    public var modifications: [Record]
    public var deletions: [Deletion]
    /// The token to pass next time (persist it after applying this page).
    public var changeToken: ServerChangeToken
    /// More changes wait; fetch again from ``changeToken``.
    public var moreComing: Bool
    /// The size in bytes of the server's answer this page was read from (0 for a page made
    /// by a test double): what a progress display counts as downloaded.
    public var responseBytes = 0
    /// How many changes the zone held after this page when the server answered, for an
    /// estimate of the rest: present when the page was asked for with `countingRemaining`
    /// (and the server counts: a Nimbus server, not in a public database). An upper bound:
    /// tombstones of records created after the token count too, and the feed leaves them out.
    public var remainingChanges: Int?

    /// A page (for test doubles of the server; the SDK decodes the server's answers).
    public init(modifications: [Record], deletions: [Deletion], changeToken: ServerChangeToken, moreComing: Bool) {
        self.modifications = modifications
        self.deletions = deletions
        self.changeToken = changeToken
        self.moreComing = moreComing
    }
}

/// One page of a database's zone changes since a token.
public struct DatabaseChanges: Sendable {
    /// Zones whose records changed (or that were created) since the token.
    public var modifiedZoneIDs: [ZoneID]
    /// Zones deleted since the token.
    public var deletedZoneIDs: [ZoneID]
    /// Zones purged (deleted with their history) since the token.
    public var purgedZoneIDs: [ZoneID]
    public var changeToken: ServerChangeToken
    public var moreComing: Bool

    /// A page (for test doubles of the server; the SDK decodes the server's answers).
    public init(
        modifiedZoneIDs: [ZoneID], deletedZoneIDs: [ZoneID], purgedZoneIDs: [ZoneID], changeToken: ServerChangeToken,
        moreComing: Bool
    ) {
        self.modifiedZoneIDs = modifiedZoneIDs
        self.deletedZoneIDs = deletedZoneIDs
        self.purgedZoneIDs = purgedZoneIDs
        self.changeToken = changeToken
        self.moreComing = moreComing
    }
}

extension Database {
    /// One page of a zone's changes since `token` (all of its records when `nil`):
    /// `records/changes`.
    ///
    /// - Parameter countingRemaining: also ask how many changes follow this page
    ///   (``RecordZoneChanges/remainingChanges``). The server counts them from an index, in
    ///   time that grows with the changes that follow: ask on the first page of a fetch and
    ///   subtract what the next pages bring.
    /// - Throws: ``NimbusError/Code/changeTokenExpired`` when the token is older than the
    ///   server's tombstone horizon (fetch again with `nil`); ``NimbusError/Code/zoneNotFound``.
    public func recordZoneChanges(
        inZoneWith zoneID: ZoneID, since token: ServerChangeToken?, desiredKeys: [String]? = nil,
        resultsLimit: Int? = nil, countingRemaining: Bool = false
    ) async throws -> RecordZoneChanges {
        try await recordZoneChangesAnswer(
            inZoneWith: zoneID, since: token, desiredKeys: desiredKeys, resultsLimit: resultsLimit,
            countingRemaining: countingRemaining
        ).read()
    }

    /// ``recordZoneChanges(inZoneWith:since:desiredKeys:resultsLimit:countingRemaining:)`` in
    /// two steps: the server's answer, with the next page's token when it can be found
    /// without reading the records (``RecordZoneChangesAnswer/nextTokenHint``), then
    /// ``RecordZoneChangesAnswer/read()``. A client that reads the feed ahead asks for the next
    /// page before it reads this one.
    ///
    /// ```swift
    /// let answer = try await database.recordZoneChangesAnswer(inZoneWith: zone, since: token)
    /// let ahead = answer.nextTokenHint.map { hint in
    ///     Task { try await database.recordZoneChangesAnswer(inZoneWith: zone, since: hint) }
    /// }
    /// let page = try await answer.read()
    /// // Use `ahead` only when the hint was the page's token; drop it otherwise.
    /// if page.changeToken != answer.nextTokenHint { ahead?.cancel() }
    /// ```
    public func recordZoneChangesAnswer(
        inZoneWith zoneID: ZoneID, since token: ServerChangeToken?, desiredKeys: [String]? = nil,
        resultsLimit: Int? = nil, countingRemaining: Bool = false
    ) async throws -> RecordZoneChangesAnswer {
        var body: [String: JSON] = ["zoneID": zoneID.wireJSON]
        if countingRemaining { body["countRemaining"] = true }
        if let token { body["syncToken"] = .string(token.rawValue) }
        if let desiredKeys { body["desiredKeys"] = .array(desiredKeys.map(JSON.string)) }
        if let resultsLimit { body["resultsLimit"] = .int(resultsLimit) }
        let answer = try await sendForBody("records/changes", body: .object(body), zoneID: zoneID)
        return RecordZoneChangesAnswer(answer, zoneID: zoneID, database: self)
    }

    /// The page in a server's `records/changes` answer: the records read (without a JSON tree
    /// for the common answer of live records only) and their encrypted fields opened.
    func readRecordZoneChanges(_ answer: Data, zoneID: ZoneID) async throws -> RecordZoneChanges {
        var changes: RecordZoneChanges
        if let page = ChangeFeedPage.parse(answer) {
            changes = try Self.recordZoneChanges(from: page, zoneID: zoneID)
        } else {
            changes = try Self.recordZoneChanges(from: try Self.parse(answer), zoneID: zoneID)
        }
        changes.responseBytes = answer.count
        // Encrypted fields open here: a value that does not fails the page (nothing applied,
        // the token not advanced), so nothing is lost and the failure is reported.
        for index in changes.modifications.indices {
            changes.modifications[index] = try await opened(changes.modifications[index])
        }
        return changes
    }

    /// Every page of a zone's changes since `token`, fetched as the sequence is iterated.
    ///
    /// ```swift
    /// for try await page in database.allRecordZoneChanges(inZoneWith: zone, since: token) {
    ///     try cache.apply(page.modifications, page.deletions)
    ///     token = page.changeToken       // persist after each page
    /// }
    /// ```
    public func allRecordZoneChanges(
        inZoneWith zoneID: ZoneID, since token: ServerChangeToken?, desiredKeys: [String]? = nil,
        resultsLimit: Int? = nil
    ) -> RecordZoneChangePages {
        RecordZoneChangePages(
            database: self, zoneID: zoneID, token: token, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
    }

    /// One page of the zones that changed since `token`: `changes/database`.
    public func databaseChanges(since token: ServerChangeToken?, resultsLimit: Int? = nil) async throws -> DatabaseChanges {
        var body: [String: JSON] = [:]
        if let token { body["syncToken"] = .string(token.rawValue) }
        if let resultsLimit { body["resultsLimit"] = .int(resultsLimit) }
        let response = try await send("changes/database", body: .object(body))
        var changes = DatabaseChanges(
            modifiedZoneIDs: [], deletedZoneIDs: [], purgedZoneIDs: [],
            changeToken: try Self.token(response), moreComing: response["moreComing"]?.bool ?? false)
        for zone in response["zones"]?.array ?? [] {
            guard let zoneJSON = zone["zoneID"], let zoneID = try? ZoneID(wire: WireReader(zoneJSON)) else {
                throw NimbusError.malformedResponse("a changed zone has no zoneID")
            }
            if zone["purged"]?.bool == true {
                changes.purgedZoneIDs.append(zoneID)
            } else if zone["deleted"]?.bool == true {
                changes.deletedZoneIDs.append(zoneID)
            } else {
                changes.modifiedZoneIDs.append(zoneID)
            }
        }
        return changes
    }

    /// Every page of the database's zone changes since `token`.
    public func allDatabaseChanges(since token: ServerChangeToken?, resultsLimit: Int? = nil) -> DatabaseChangePages {
        DatabaseChangePages(database: self, token: token, resultsLimit: resultsLimit)
    }

    static func token(_ response: JSON, key: String = "syncToken") throws -> ServerChangeToken {
        guard let text = response[key]?.string else {
            throw NimbusError.malformedResponse("the response has no \(key)")
        }
        return ServerChangeToken(rawValue: text)
    }

    /// The page ``ChangeFeedPage/parse(_:)`` read: what ``recordZoneChanges(from:zoneID:)``
    /// gives for the same answer.
    static func recordZoneChanges(from page: ChangeFeedPage, zoneID: ZoneID) throws -> RecordZoneChanges {
        let head = JSON.object(page.members)
        var changes = RecordZoneChanges(
            modifications: page.records.map { Record(wire: $0, zoneID: zoneID) }, deletions: [],
            changeToken: try token(head), moreComing: head["moreComing"]?.bool ?? false)
        changes.remainingChanges = remainingChanges(head)
        return changes
    }

    /// `remainingChanges`, when the server sent a count that fits.
    static func remainingChanges(_ answer: JSON) -> Int? {
        answer["remainingChanges"]?.int64.flatMap { $0 >= 0 ? Int(exactly: $0) : nil }
    }

    static func recordZoneChanges(from response: JSON, zoneID: ZoneID) throws -> RecordZoneChanges {
        var changes = RecordZoneChanges(
            modifications: [], deletions: [], changeToken: try token(response),
            moreComing: response["moreComing"]?.bool ?? false)
        changes.remainingChanges = remainingChanges(response)
        for item in response["records"]?.array ?? [] {
            if item["deleted"]?.bool == true {
                guard let name = item["recordName"]?.string else {
                    throw NimbusError.malformedResponse("a deleted record has no recordName")
                }
                changes.deletions.append(
                    .init(recordID: Record.ID(recordName: name, zoneID: zoneID), recordType: item["recordType"]?.string))
            } else {
                changes.modifications.append(try record(from: item, zoneID: zoneID))
            }
        }
        return changes
    }
}

/// The pages of a zone's changes, fetched one request per page as you iterate, until the
/// server says no more are coming. Cancelling the iterating task cancels the request.
public struct RecordZoneChangePages: AsyncSequence, Sendable {
    public typealias Element = RecordZoneChanges
    let database: Database
    let zoneID: ZoneID
    let token: ServerChangeToken?
    let desiredKeys: [String]?
    let resultsLimit: Int?

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(pages: self, token: token)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let pages: RecordZoneChangePages
        var token: ServerChangeToken?
        var finished = false

        public mutating func next() async throws -> RecordZoneChanges? {
            guard !finished else { return nil }
            let page = try await pages.database.recordZoneChanges(
                inZoneWith: pages.zoneID, since: token, desiredKeys: pages.desiredKeys, resultsLimit: pages.resultsLimit)
            token = page.changeToken
            finished = !page.moreComing
            return page
        }
    }
}

/// The pages of a database's zone changes, fetched as you iterate.
public struct DatabaseChangePages: AsyncSequence, Sendable {
    public typealias Element = DatabaseChanges
    let database: Database
    let token: ServerChangeToken?
    let resultsLimit: Int?

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(pages: self, token: token)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let pages: DatabaseChangePages
        var token: ServerChangeToken?
        var finished = false

        public mutating func next() async throws -> DatabaseChanges? {
            guard !finished else { return nil }
            let page = try await pages.database.databaseChanges(since: token, resultsLimit: pages.resultsLimit)
            token = page.changeToken
            finished = !page.moreComing
            return page
        }
    }
}
