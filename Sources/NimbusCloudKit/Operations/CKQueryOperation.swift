import Foundation
import Nimbus
import NimbusProtocol

/// Runs a query: CloudKit's `CKQueryOperation`. ``recordMatchedBlock`` is called for each
/// matching record in order, then ``queryResultBlock`` with a cursor when more matched than
/// ``resultsLimit`` allowed (start a new operation with ``init(cursor:)`` to continue).
///
/// `@unchecked Sendable`: see ``CKOperation``.
open class CKQueryOperation: CKDatabaseOperation, @unchecked Sendable {
    /// A ``resultsLimit`` that leaves the page size to the server.
    public static let maximumResults = 0

    /// Where a query left off (CloudKit's `CKQueryOperation.Cursor`).
    public typealias Cursor = CKQueryCursor

    @Protected public var query: CKQuery? = nil
    @Protected public var cursor: Cursor? = nil
    /// The zone to search; every zone of the database when `nil`.
    @Protected public var zoneID: CKRecordZone.ID? = nil
    @Protected public var resultsLimit: Int = CKQueryOperation.maximumResults
    @Protected public var desiredKeys: [CKRecord.FieldKey]? = nil

    @Protected public var recordMatchedBlock: (@Sendable (CKRecord.ID, Result<CKRecord, any Error>) -> Void)? = nil
    @Protected public var queryResultBlock: (@Sendable (Result<Cursor?, any Error>) -> Void)? = nil
    /// The pre-iOS 15 per-record block (matched records only).
    @Protected public var recordFetchedBlock: (@Sendable (CKRecord) -> Void)? = nil
    /// The pre-iOS 15 final block.
    @Protected public var queryCompletionBlock: (@Sendable (Cursor?, (any Error)?) -> Void)? = nil

    private let nextCursor = Locked<Cursor?>(nil)

    public override init() {
        super.init()
    }

    public convenience init(query: CKQuery) {
        self.init()
        self.query = query
    }

    public convenience init(cursor: Cursor) {
        self.init()
        self.cursor = cursor
    }

    override func execute() async {
        let page: (matchResults: [(CKRecord.ID, Result<CKRecord, any Error>)], queryCursor: Cursor?)
        do {
            let database = targetDatabase
            if let cursor {
                page = try await database.records(
                    continuingMatchFrom: cursor, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
            } else if let query {
                page = try await database.records(
                    matching: query, inZoneWith: zoneID, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
            } else {
                finishReporting(CKError(.invalidArguments, message: "a CKQueryOperation needs a query or a cursor"))
                return
            }
        } catch {
            finishReporting(CKError.wrapping(error))
            return
        }
        for (id, result) in page.matchResults {
            recordMatchedBlock?(id, result)
            if case .success(let record) = result { recordFetchedBlock?(record) }
        }
        nextCursor.withLock { $0 = page.queryCursor }
        finishReporting(cancellationError)
    }

    override func reportFinal(_ error: CKError?) {
        let cursor = nextCursor.current
        queryResultBlock?(error.map { .failure($0) } ?? .success(cursor))
        queryCompletionBlock?(error == nil ? cursor : nil, error)
    }
}

/// Where a query left off: secure-codable, so an app can persist it. Write it
/// `CKQueryOperation.Cursor`, as in CloudKit; the top-level name (CloudKit's Objective-C one)
/// lets `NSKeyedArchiver` archive it off Apple platforms.
public final class CKQueryCursor: NSObject, NSSecureCoding, NSCopying, Sendable {
    let cursor: QueryCursor

    init(_ cursor: QueryCursor) {
        self.cursor = cursor
    }

    public static var supportsSecureCoding: Bool { true }

    public func encode(with coder: NSCoder) {
        var members: [String: JSON] = [
            "query": cursor.query.wireJSON, "marker": .string(cursor.continuationMarker),
        ]
        if let zoneID = cursor.zoneID { members["zoneID"] = zoneID.wireJSON }
        coder.encode(Data(JSON.object(members).serializedBytes()) as NSData, forKey: "NimbusCursor")
    }

    public required init?(coder: NSCoder) {
        guard let data = coder.decodeObject(of: NSData.self, forKey: "NimbusCursor"),
            let json = try? JSON.parse(Array(Data(referencing: data))), let marker = json["marker"]?.string,
            let queryJSON = json["query"], let query = try? RecordQuery(wire: WireReader(queryJSON))
        else { return nil }
        let zoneID = json["zoneID"].flatMap { try? ZoneID(wire: WireReader($0)) }
        self.cursor = QueryCursor(query: query, zoneID: zoneID, continuationMarker: marker)
    }

    public func copy(with zone: NSZone? = nil) -> Any { self }

    public override func isEqual(_ object: Any?) -> Bool { (object as? CKQueryCursor)?.cursor == cursor }
    public override var hash: Int { cursor.hashValue }
}
