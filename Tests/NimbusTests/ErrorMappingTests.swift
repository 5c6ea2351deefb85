import Foundation
import Nimbus
import Testing

@Suite("Error mapping")
struct ErrorMappingTests {
    static let expected: [(ServerErrorCode, NimbusError.Code)] = [
        (.accessDenied, .permissionFailure),
        (.atomicError, .batchRequestFailed),
        (.authenticationFailed, .notAuthenticated),
        (.authenticationRequired, .notAuthenticated),
        (.badRequest, .invalidArguments),
        (.conflict, .serverRecordChanged),
        (.exists, .serverRecordChanged),
        (.internalError, .internalError),
        (.notFound, .unknownItem),
        (.quotaExceeded, .quotaExceeded),
        (.throttled, .requestRateLimited),
        (.tryAgainLater, .serviceUnavailable),
        (.validatingReferenceError, .referenceViolation),
        (.zoneNotFound, .zoneNotFound),
        (.changeTokenExpired, .changeTokenExpired),
        (.limitExceeded, .limitExceeded),
    ]

    @Test func everyServerCodeHasAMapping() {
        #expect(Set(Self.expected.map(\.0)) == Set(ServerErrorCode.allCases))
    }

    @Test(arguments: expected)
    func topLevelErrorsMapToTheirCode(serverCode: ServerErrorCode, code: NimbusError.Code) async throws {
        let transport = TestTransport(responses: [.error(serverCode, "because", retryAfter: 7)])
        let database = makeContainer(transport).privateCloudDatabase
        let error = try await #require(throws: NimbusError.self) {
            try await database.recordZoneChanges(inZoneWith: ZoneID(zoneName: "Z"), since: nil)
        }
        #expect(error.code == code)
        #expect(error.serverErrorCode == serverCode.rawValue)
        #expect(error.httpStatus == serverCode.httpStatus)
        #expect(error.message == "because")
        #expect(error.requestUUID == "u-1")
        #expect(error.retryAfterSeconds == 7)
        #expect(error.retryAfter == .seconds(7))
    }

    @Test func tryAgainLaterAboutAZoneIsZoneBusy() {
        #expect(NimbusError.Code(serverErrorCode: .tryAgainLater, aboutZone: true) == .zoneBusy)
        #expect(NimbusError.Code(serverErrorCode: .tryAgainLater) == .serviceUnavailable)
    }

    @Test(arguments: [
        (400, NimbusError.Code.invalidArguments), (401, .notAuthenticated), (403, .permissionFailure),
        (404, .unknownItem), (409, .serverRecordChanged), (410, .changeTokenExpired), (412, .referenceViolation),
        (413, .quotaExceeded), (421, .notAuthenticated), (429, .requestRateLimited), (500, .internalError),
        (502, .serviceUnavailable), (503, .serviceUnavailable), (504, .serviceUnavailable), (418, .serverRejectedRequest),
    ])
    func statusesWithoutACloudKitBodyMapByStatus(status: Int, code: NimbusError.Code) async throws {
        let transport = TestTransport(responses: [
            TransportResponse(status: status, headers: ["Retry-After": "3"], body: Data("<html>proxy</html>".utf8))
        ])
        let error = try await #require(throws: NimbusError.self) {
            try await makeContainer(transport).privateCloudDatabase.allRecordZones()
        }
        #expect(error.code == code)
        #expect(error.httpStatus == status)
        #expect(error.retryAfterSeconds == 3)
    }

    @Test func unknownServerCodesAreRejectedRequestsThatKeepTheCode() async throws {
        let body: JSON = ["uuid": "u", "serverErrorCode": "SHINY_NEW_CODE", "reason": "r"]
        let transport = TestTransport(responses: [.json(body, status: 400)])
        let error = try await #require(throws: NimbusError.self) {
            try await makeContainer(transport).privateCloudDatabase.allRecordZones()
        }
        #expect(error.code == .serverRejectedRequest)
        #expect(error.serverErrorCode == "SHINY_NEW_CODE")
    }

    @Test func successResponsesThatAreNotCloudKitAreRejected() async throws {
        let transport = TestTransport(responses: [TransportResponse(status: 200, body: Data("not json".utf8))])
        let error = try await #require(throws: NimbusError.self) {
            try await makeContainer(transport).privateCloudDatabase.allRecordZones()
        }
        #expect(error.code == .serverRejectedRequest)
    }

    @Test func transportFailuresBecomeNetworkErrors() async throws {
        struct Boom: Error {}
        let unreachable = TestTransport { _ in throw NimbusError(.networkUnavailable, "refused") }
        let broken = TestTransport { _ in throw Boom() }
        let database = makeContainer(unreachable).privateCloudDatabase
        let first = try await #require(throws: NimbusError.self) { try await database.allRecordZones() }
        #expect(first.code == .networkUnavailable)
        #expect(first.isRetryable)
        let second = try await #require(throws: NimbusError.self) {
            try await makeContainer(broken).privateCloudDatabase.allRecordZones()
        }
        #expect(second.code == .networkFailure)
        #expect(second.isRetryable)
    }

    @Test func unreachableServerIsNetworkUnavailableOverRealHTTP() async throws {
        // Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
        let container = makeContainer(HTTPClientTransport(), baseURL: "http://127.0.0.1:9")
        let error = try await #require(throws: NimbusError.self) {
            try await withTimeout { try await container.privateCloudDatabase.allRecordZones() }
        }
        #expect(error.code == .networkUnavailable, "\(error)")
        #expect(error.isRetryable)
    }

    @Test func retryabilityFollowsTheCode() {
        let retryable: Set<NimbusError.Code> = [
            .requestRateLimited, .serviceUnavailable, .zoneBusy, .networkFailure, .networkUnavailable,
        ]
        for code in NimbusError.Code.allKnown where code != .partialFailure {
            #expect(NimbusError(code, "x").isRetryable == retryable.contains(code), "\(code)")
        }
    }

    @Test func partialFailureIsRetryableOnlyWhenEveryCauseIs() {
        let a = NimbusError.ItemID.record(Record.ID(recordName: "a"))
        let b = NimbusError.ItemID.record(Record.ID(recordName: "b"))
        let busy = NimbusError(.partialFailure, "p", partialErrorsByItemID: [
            a: NimbusError(.zoneBusy, "busy"), b: NimbusError(.batchRequestFailed, "atomic"),
        ])
        let conflict = NimbusError(.partialFailure, "p", partialErrorsByItemID: [
            a: NimbusError(.serverRecordChanged, "conflict"), b: NimbusError(.batchRequestFailed, "atomic"),
        ])
        #expect(busy.isRetryable)
        #expect(!conflict.isRetryable)
    }

    @Test func catchClausesCanMatchCodes() async {
        let transport = TestTransport(responses: [.error(.zoneNotFound)])
        do {
            _ = try await makeContainer(transport).privateCloudDatabase.recordZoneChanges(
                inZoneWith: ZoneID(zoneName: "gone"), since: nil)
            Issue.record("expected an error")
        } catch NimbusError.Code.zoneNotFound {
            // matched
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}

@Suite("Per-item failures and conflicts")
struct PartialFailureTests {
    let zone = ZoneID(zoneName: "ReadingList")

    @Test func modifyReportsEachItemBesideTheSuccesses() async throws {
        let transport = TestTransport(responses: [
            .json([
                "records": [
                    serverRecordJSON("ok", tag: "t9"),
                    wireError(.badRequest, "field 'x' too big", recordName: "bad"),
                    wireError(.notFound, "gone", recordName: "missing"),
                ]
            ])
        ])
        let database = makeContainer(transport).privateCloudDatabase
        let ok = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "ok", zoneID: zone))
        let bad = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "bad", zoneID: zone))
        let missing = Record.ID(recordName: "missing", zoneID: zone)
        let results = try await database.modifyRecords(saving: [ok, bad], deleting: [missing], atomically: false)

        #expect(try results.saveResults[ok.id]?.get().recordChangeTag == "t9")
        #expect(try results.saveResults[ok.id]?.get().id == ok.id)
        let badError = try #require(results.saveResults[bad.id].flatMap { try? $0.failureValue })
        #expect(badError.code == .invalidArguments)
        #expect(badError.recordID == bad.id)
        let missingError = try #require(results.deleteResults[missing].flatMap { try? $0.failureValue })
        #expect(missingError.code == .unknownItem)
        #expect(missingError.recordID == missing)
    }

    @Test func conflictsCarryClientAncestorAndServerRecords() async throws {
        // The device fetched v1 ("Old"), another device saved v2 ("Theirs"), this device saves "Mine".
        let lookup = TestTransport(responses: [
            .json(["records": [serverRecordJSON("r1", tag: "v1", fields: ["title": "Old", "note": "n"], zone: "ReadingList")]])
        ])
        var mine = try await makeContainer(lookup).privateCloudDatabase.record(for: Record.ID(recordName: "r1", zoneID: zone))
        mine["title"] = "Mine"

        let serverCopy = serverRecordJSON("r1", tag: "v2", fields: ["title": "Theirs", "note": "n"], zone: "ReadingList")
        var conflict = wireError(.conflict, "the record changed", recordName: "r1")
        if case .object(var members) = conflict {
            members["serverRecord"] = serverCopy
            conflict = .object(members)
        }
        let transport = TestTransport(responses: [.json(["records": [conflict]])])
        let error = try await #require(throws: NimbusError.self) {
            try await makeContainer(transport).privateCloudDatabase.save(mine)
        }

        #expect(error.code == .serverRecordChanged)
        #expect(error.recordID == mine.id)
        #expect(error.clientRecord?["title"] == "Mine")
        #expect(error.ancestorRecord?["title"] == "Old")
        #expect(error.ancestorRecord?.recordChangeTag == "v1")
        #expect(error.serverRecord?["title"] == "Theirs")
        #expect(error.serverRecord?.recordChangeTag == "v2")
        #expect(error.serverRecord?.id == mine.id)

        // The server record is ready to take the merged change and save again.
        var merged = try #require(error.serverRecord)
        merged["title"] = "Mine"
        #expect(merged.changedKeys == ["title"])
    }

    @Test func creatingARecordThatExistsIsAServerRecordChange() async throws {
        let transport = TestTransport(responses: [
            .json(["records": [wireError(.exists, "exists", recordName: "r1")]])
        ])
        let record = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "r1", zoneID: zone))
        let error = try await #require(throws: NimbusError.self) {
            try await makeContainer(transport).privateCloudDatabase.save(record)
        }
        #expect(error.code == .serverRecordChanged)
        #expect(error.clientRecord == record)
        #expect(error.ancestorRecord == nil)
    }

    @Test func atomicFailuresNameTheCauseAndTheInnocent() async throws {
        let transport = TestTransport(responses: [
            .json([
                "records": [
                    wireError(.atomicError, "another failed", recordName: "a"),
                    wireError(.conflict, "changed", recordName: "b"),
                ]
            ])
        ])
        let a = Record(recordType: "T", recordID: Record.ID(recordName: "a", zoneID: zone))
        let b = Record(recordType: "T", recordID: Record.ID(recordName: "b", zoneID: zone))
        let results = try await makeContainer(transport).privateCloudDatabase.modifyRecords(saving: [a, b])
        #expect(transport.bodies.first?["atomic"] == true)
        #expect(results.saveResults[a.id].flatMap { try? $0.failureValue }?.code == .batchRequestFailed)
        #expect(results.saveResults[b.id].flatMap { try? $0.failureValue }?.code == .serverRecordChanged)
    }

    @Test func aZoneLevelFailureWithSeveralZonesBecomesEachItemsError() async throws {
        let other = ZoneID(zoneName: "ReadingHistory")
        let transport = TestTransport { request in
            let body = try JSON.parse(Array(request.body!))
            if body["zoneID"]?["zoneName"] == "ReadingHistory" { return .error(.zoneNotFound) }
            return .json(["records": [serverRecordJSON("a")]])
        }
        let a = Record(recordType: "T", recordID: Record.ID(recordName: "a", zoneID: zone))
        let b = Record(recordType: "T", recordID: Record.ID(recordName: "b", zoneID: other))
        let results = try await makeContainer(transport).privateCloudDatabase.modifyRecords(saving: [a, b])
        #expect((try? results.saveResults[a.id]?.get()) != nil)
        let error = results.saveResults[b.id].flatMap { try? $0.failureValue }
        #expect(error?.code == .zoneNotFound)
        #expect(error?.recordID == b.id)
    }
}

extension Result {
    /// The failure, or a thrown error when this is a success.
    var failureValue: Failure {
        get throws {
            if case .failure(let error) = self { return error }
            throw TimedOut(what: "a failure, got a success")
        }
    }
}
