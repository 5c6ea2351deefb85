import Crypto
import Foundation
import Nimbus
import Testing

@Suite("Requests on the wire")
struct RequestMappingTests {
    let zone = ZoneID(zoneName: "ReadingList")

    /// A path of unreserved bytes is sent as it is; any other byte is percent-encoded as
    /// Foundation encodes it, segment by segment.
    @Test func pathsArePercentEncodedOnlyWhereTheyNeedIt() {
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let alphabet = Array("aZ09-._~/ %?#+é\u{1F600}")
        var generator = SystemRandomNumberGenerator()
        let paths = ["", "/", "//", "/database/1/iCloud.com.example/development/private/records/changes", "a b/c"]
            + (0..<2_000).map { _ in String((0..<Int.random(in: 0...12, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }) }
        for path in paths {
            let expected = path.split(separator: "/", omittingEmptySubsequences: false)
                .map { $0.addingPercentEncoding(withAllowedCharacters: unreserved)! }.joined(separator: "/")
            #expect(Database.percentEncodedPath(path) == expected, "\(path)")
        }
    }

    @Test func requestsCarryPathTokensAndDeviceID() async throws {
        let transport = TestTransport(responses: [.json(["records": [serverRecordJSON("r1")]])])
        let database = makeContainer(transport, baseURL: "https://sync.example.com/nimbus/").privateCloudDatabase
        _ = try await database.record(for: Record.ID(recordName: "r1"))

        let request = try #require(transport.requests.first)
        #expect(request.method == .post)
        #expect(request.url.scheme == "https")
        #expect(request.url.host == "sync.example.com")
        #expect(
            request.url.path == "/nimbus/database/1/iCloud.com.example.reader/development/private/records/lookup")
        // '+', '/', '=' and ' ' in tokens are percent-encoded, never sent raw.
        #expect(request.url.query == "ckAPIToken=api%2B%2F%3Dtoken&ckWebAuthToken=web%20token")
        #expect(request.headers["X-Nimbus-Device-ID"] == "device-A")
        #expect(request.headers["Content-Type"]?.hasPrefix("application/json") == true)
        let body = try #require(transport.bodies.first)
        #expect(body["zoneID"]?["zoneName"] == "_defaultZone")
        #expect(body["records"] == [["recordName": "r1"]])
    }

    @Test(arguments: [
        (SavePolicy.ifServerRecordUnchanged, "update", true, ["title"]),
        (SavePolicy.changedKeys, "forceUpdate", false, ["title"]),
        (SavePolicy.allKeys, "forceReplace", false, ["note", "title"]),
    ])
    func savePolicyChoosesOperationTypeAndFields(
        policy: SavePolicy, operationType: String, sendsTag: Bool, fields: [String]
    ) async throws {
        let transport = TestTransport { request in
            .json(["records": [serverRecordJSON("r1", tag: "t2", fields: ["title": "New", "note": "n"])]])
        }
        var record = try await fetched(["title": "Old", "note": "n"], transport: transport)
        record["title"] = "New"
        let saved = try await makeContainer(transport).privateCloudDatabase.save(record, savePolicy: policy)

        let operation = try #require(transport.bodies.last?["operations"]?.array?.first)
        #expect(operation["operationType"]?.string == operationType)
        let sent = try #require(operation["record"])
        #expect(sent["recordChangeTag"]?.string == (sendsTag ? "t1" : nil))
        #expect(sent["fields"]?.object?.keys.sorted() == fields)
        #expect(sent["fields"]?["title"] == ["value": "New", "type": "STRING"])
        #expect(saved.recordChangeTag == "t2")
        #expect(saved.changedKeys.isEmpty)
    }

    @Test func newRecordsAreCreatedWithAllFields() async throws {
        let transport = TestTransport { _ in .json(["records": [serverRecordJSON("n1", fields: ["title": "T"])]]) }
        var record = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "n1", zoneID: zone))
        record["title"] = "T"
        record["count"] = 2
        try await makeContainer(transport).privateCloudDatabase.save(record)

        let body = try #require(transport.bodies.last)
        #expect(body["zoneID"]?["zoneName"] == "ReadingList")
        #expect(body["atomic"] == false)
        let operation = try #require(body["operations"]?.array?.first)
        #expect(operation["operationType"] == "create")
        #expect(operation["record"]?["recordChangeTag"] == nil)
        #expect(operation["record"]?["recordType"] == "Bookmark")
        #expect(operation["record"]?["fields"]?["count"] == ["value": 2, "type": "INT64"])
    }

    @Test(arguments: [
        (SavePolicy.ifServerRecordUnchanged, "replace"), (SavePolicy.changedKeys, "forceReplace"),
    ])
    func removingAKeySendsTheWholeRecord(policy: SavePolicy, operationType: String) async throws {
        let transport = TestTransport { _ in .json(["records": [serverRecordJSON("r1", tag: "t2")]]) }
        var record = try await fetched(["title": "Old", "note": "n"], transport: transport)
        record["note"] = nil as String?
        try await makeContainer(transport).privateCloudDatabase.save(record, savePolicy: policy)

        let operation = try #require(transport.bodies.last?["operations"]?.array?.first)
        #expect(operation["operationType"]?.string == operationType)
        #expect(operation["record"]?["fields"]?.object?.keys.sorted() == ["title"])
    }

    @Test func deletesAreForceDeletesGroupedByZone() async throws {
        let transport = TestTransport { request in
            let body = try JSON.parse(Array(request.body!))
            let names = body["operations"]!.array!.map { $0["record"]!["recordName"]!.string! }
            return .json(["records": .array(names.map { .object(["recordName": .string($0), "deleted": true]) })])
        }
        let other = ZoneID(zoneName: "ReadingHistory")
        let results = try await makeContainer(transport).privateCloudDatabase.modifyRecords(
            deleting: [Record.ID(recordName: "a", zoneID: zone), Record.ID(recordName: "b", zoneID: other),
                Record.ID(recordName: "c", zoneID: zone)])

        #expect(transport.bodies.count == 2)
        #expect(transport.bodies.map { $0["zoneID"]?["zoneName"]?.string } == ["ReadingList", "ReadingHistory"])
        #expect(transport.bodies[0]["operations"]?.array?.map { $0["operationType"]?.string } == ["forceDelete", "forceDelete"])
        #expect(results.deleteResults.count == 3)
        #expect(results.deleteResults.values.allSatisfy { (try? $0.get()) != nil })
    }

    @Test func deletesWithAChangeTagAreLocked() async throws {
        let transport = TestTransport { _ in
            .json(["records": [["recordName": "a", "deleted": true], ["recordName": "b", "deleted": true]]])
        }
        let a = Record.ID(recordName: "a", zoneID: zone)
        let b = Record.ID(recordName: "b", zoneID: zone)
        _ = try await makeContainer(transport).privateCloudDatabase.modifyRecords(
            deleting: [a, b], deleteChangeTags: [a: "t5"])
        let operations = try #require(transport.bodies.first?["operations"]?.array)
        #expect(operations[0] == ["operationType": "delete", "record": ["recordName": "a", "recordChangeTag": "t5"]])
        #expect(operations[1] == ["operationType": "forceDelete", "record": ["recordName": "b"]])
    }

    @Test func serverToServerRequestsAreSignedOverDateBodyHashAndPath() async throws {
        let key = P256.Signing.PrivateKey()
        let transport = TestTransport { _ in .json(["records": [serverRecordJSON("r1")]]) }
        let credentials = try Credentials.serverToServerKey(keyID: "key-1", privateKeyPEM: key.pemRepresentation)
        _ = try await makeContainer(transport, credentials: credentials).publicCloudDatabase.record(
            for: Record.ID(recordName: "r1"))

        let request = try #require(transport.requests.first)
        #expect(request.url.query == nil)
        #expect(request.headers["X-Apple-CloudKit-Request-KeyID"] == "key-1")
        let date = try #require(request.headers["X-Apple-CloudKit-Request-ISO8601Date"])
        let signature = try #require(request.headers["X-Apple-CloudKit-Request-SignatureV1"].flatMap { Data(base64Encoded: $0) })
        let bodyHash = Data(SHA256.hash(data: request.body!)).base64EncodedString()
        let message = Data("\(date):\(bodyHash):\(request.url.path)".utf8)
        #expect(key.publicKey.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: signature), for: message))
    }

    @Test func badPrivateKeysAreRejectedUpFront() {
        #expect(throws: NimbusError.self) { try Credentials.serverToServerKey(keyID: "k", privateKeyPEM: "nope") }
    }

    @Test func zoneChangesRequestCarriesTokenLimitAndKeys() async throws {
        let transport = TestTransport(responses: [
            .json(["records": [], "syncToken": "s1", "moreComing": false])
        ])
        let database = makeContainer(transport).privateCloudDatabase
        let first = try await database.recordZoneChanges(inZoneWith: zone, since: nil)
        _ = try await database.recordZoneChanges(
            inZoneWith: zone, since: first.changeToken, desiredKeys: ["title"], resultsLimit: 10)

        #expect(transport.bodies[0]["syncToken"] == nil)
        #expect(transport.bodies[1]["syncToken"] == "s1")
        #expect(transport.bodies[1]["resultsLimit"] == 10)
        #expect(transport.bodies[1]["desiredKeys"] == ["title"])
        #expect(transport.operations == ["records/changes", "records/changes"])
    }

    @Test func queriesAndSubscriptionsUseCloudKitShapes() async throws {
        let query = Query(
            recordType: "Bookmark",
            filters: [.equals("read", true), .near("where", Location(latitude: 1, longitude: 2), meters: 500)],
            sortDescriptors: [.descending("addedAt")])
        let subscription = Subscription(
            id: "s1", kind: .query(query, zoneID: zone, firesOn: [.create, .delete], firesOnce: false))
        let transport = TestTransport { request in
            if request.url.path.hasSuffix("records/query") { return .json(["records": []]) }
            // Echo the subscription back, as the server does.
            let body = try JSON.parse(Array(request.body!))
            return .json(["subscriptions": [body["operations"]![0]!["subscription"]!]])
        }
        let database = makeContainer(transport).privateCloudDatabase
        _ = try await database.records(matching: query, inZoneWith: zone)
        let saved = try await database.save(subscription)

        let queryBody = transport.bodies[0]["query"]
        #expect(queryBody?["recordType"] == "Bookmark")
        #expect(queryBody?["filterBy"]?[0] == ["comparator": "EQUALS", "fieldName": "read", "fieldValue": ["value": 1, "type": "INT64"]])
        #expect(queryBody?["filterBy"]?[1]?["comparator"] == "NEAR")
        #expect(queryBody?["filterBy"]?[1]?["distance"] == 500)
        #expect(queryBody?["sortBy"] == [["fieldName": "addedAt", "ascending": false]])
        let sent = transport.bodies[1]["operations"]?[0]
        #expect(sent?["operationType"] == "create")
        #expect(sent?["subscription"]?["subscriptionType"] == "query")
        #expect(sent?["subscription"]?["firesOn"] == ["create", "delete"])
        #expect(sent?["subscription"]?["notificationInfo"]?["shouldSendContentAvailable"] == true)
        #expect(saved == subscription)
        #expect(Query.Filter.Comparator.allCases.count == 20)
    }

    /// A record as fetched through `transport` (its first response must be the lookup).
    private func fetched(_ fields: [String: FieldValue], transport: TestTransport) async throws -> Record {
        let lookup = TestTransport(responses: [.json(["records": [serverRecordJSON("r1", tag: "t1", fields: fields)]])])
        return try await makeContainer(lookup).privateCloudDatabase.record(for: Record.ID(recordName: "r1"))
    }
}

extension JSON {
    subscript(index: Int) -> JSON? {
        guard let array, index < array.count else { return nil }
        return array[index]
    }
}
