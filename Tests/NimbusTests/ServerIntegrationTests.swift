import Crypto
import Foundation
import Nimbus
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// The SDK against a real Nimbus server, in process, over HTTP on loopback.
@Suite("Against a real server")
struct ServerIntegrationTests {
    let readingList = ZoneID(zoneName: "ReadingList")

    @Test func savesFetchesAndDeletesRecordsOfEveryFieldType() async throws {
        try await LiveServer.with { server in
            let container = try await server.container(user: "ana", device: "phone")
            let database = container.privateCloudDatabase
            try await database.save(RecordZone(zoneID: readingList))

            let article = Record.ID(recordName: "article-1", zoneID: readingList)
            var target = Record(recordType: "Article", recordID: article)
            target["title"] = "Swift on the server"
            try await database.save(target)

            var bookmark = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "b1", zoneID: readingList))
            let addedAt = Date(timeIntervalSince1970: 1_700_000_000.5)
            bookmark["title"] = "Swift on the server"
            bookmark["count"] = 42
            bookmark["ratio"] = 0.5
            bookmark["read"] = false
            bookmark["addedAt"] = addedAt
            bookmark["thumbnail"] = Data([0, 1, 2, 255])
            bookmark["where"] = Location(latitude: 52.52, longitude: 13.405)
            bookmark["article"] = Reference(recordID: article, action: .deleteSelf)
            bookmark["tags"] = ["swift", "server"]
            let saved = try await database.save(bookmark)
            #expect(saved.recordChangeTag != nil)
            #expect(saved.changedKeys.isEmpty)
            #expect(saved.lastModifiedDeviceID == "phone")

            let fetched = try await database.record(for: bookmark.id)
            #expect(fetched.recordChangeTag == saved.recordChangeTag)
            for key in bookmark.allKeys {
                #expect(fetched.fieldValue(forKey: key) == bookmark.fieldValue(forKey: key), "\(key)")
            }
            #expect(fetched["addedAt"] == addedAt)
            let me = try await container.userRecordID()
            #expect(fetched.creatorUserRecordName == me.recordName)
            #expect(me.recordName.hasPrefix("_"))

            // DELETE_SELF: deleting the article deletes the bookmark.
            try await database.deleteRecord(withID: article)
            let error = try await #require(throws: NimbusError.self) { try await database.record(for: bookmark.id) }
            #expect(error.code == .unknownItem)
            #expect(error.recordID == bookmark.id)
        }
    }

    @Test func aConflictComesBackWithAllThreeRecordsAndMergesOnRetry() async throws {
        try await LiveServer.with { server in
            let phone = try await server.container(user: "ana", device: "phone").privateCloudDatabase
            let laptop = try await server.container(user: "ana", device: "laptop").privateCloudDatabase
            try await phone.save(RecordZone(zoneID: readingList))
            var original = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "b1", zoneID: readingList))
            original["title"] = "Draft"
            original["note"] = ""
            try await phone.save(original)

            var onPhone = try await phone.record(for: original.id)
            var onLaptop = try await laptop.record(for: original.id)
            onPhone["title"] = "Final title"
            try await phone.save(onPhone)

            onLaptop["note"] = "read later"
            let conflict = try await #require(throws: NimbusError.self) { try await laptop.save(onLaptop) }
            #expect(conflict.code == .serverRecordChanged)
            #expect(conflict.clientRecord?["note"] == "read later")
            #expect(conflict.ancestorRecord?["title"] == "Draft")
            #expect(conflict.ancestorRecord?["note"] == "")
            let server = try #require(conflict.serverRecord)
            #expect(server["title"] == "Final title")
            #expect(server.recordChangeTag != onLaptop.recordChangeTag)

            // Merge: the server's copy plus this device's change, saved against the new tag.
            var merged = server
            for key in onLaptop.changedKeys { merged.setFieldValue(onLaptop.fieldValue(forKey: key), forKey: key) }
            try await laptop.save(merged)
            let final = try await phone.record(for: original.id)
            #expect(final["title"] == "Final title")
            #expect(final["note"] == "read later")
        }
    }

    @Test func changedKeysSavesKeepOtherDevicesEditsWithoutATagCheck() async throws {
        try await LiveServer.with { server in
            let phone = try await server.container(user: "ana", device: "phone").privateCloudDatabase
            let laptop = try await server.container(user: "ana", device: "laptop").privateCloudDatabase
            try await phone.save(RecordZone(zoneID: readingList))
            var record = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "b1", zoneID: readingList))
            record["title"] = "A"
            record["note"] = "x"
            let saved = try await phone.save(record)

            var phoneCopy = saved
            phoneCopy["title"] = "B"
            try await phone.save(phoneCopy, savePolicy: .changedKeys)

            // The laptop edits from the system fields it cached, knowing nothing of the title change.
            var laptopCopy = try Record(systemFieldsData: saved.encodeSystemFields())
            laptopCopy["note"] = "y"
            try await laptop.save(laptopCopy, savePolicy: .changedKeys)

            let final = try await phone.record(for: record.id)
            #expect(final["title"] == "B")
            #expect(final["note"] == "y")
        }
    }

    @Test func aLockedDeleteLosesToANewerEdit() async throws {
        try await LiveServer.with { server in
            let phone = try await server.container(user: "ana", device: "phone").privateCloudDatabase
            let laptop = try await server.container(user: "ana", device: "laptop").privateCloudDatabase
            try await phone.save(RecordZone(zoneID: readingList))
            var record = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "b1", zoneID: readingList))
            record["title"] = "A"
            let seen = try await phone.save(record)

            var edited = try await laptop.record(for: record.id)
            edited["title"] = "B"
            try await laptop.save(edited)

            let results = try await phone.modifyRecords(
                deleting: [record.id], deleteChangeTags: [record.id: seen.recordChangeTag!])
            let error = try #require(results.deleteResults[record.id].flatMap { try? $0.failureValue })
            #expect(error.code == .serverRecordChanged)
            #expect(error.serverRecord?["title"] == "B")
            #expect(try await phone.record(for: record.id)["title"] == "B")
        }
    }

    @Test func zoneChangesPageCoalesceAndResumeFromTokens() async throws {
        try await LiveServer.with { server in
            let database = try await server.container(user: "ana").privateCloudDatabase
            try await database.save(RecordZone(zoneID: readingList))
            let records = (1...5).map { index in
                var record = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "b\(index)", zoneID: readingList))
                record["title"] = "Title \(index)"
                return record
            }
            _ = try await database.modifyRecords(saving: records)
            try await database.deleteRecord(withID: records[4].id)  // created and deleted: never seen

            var names: [String] = []
            var pages = 0
            var token: ServerChangeToken?
            for try await page in database.allRecordZoneChanges(inZoneWith: readingList, since: nil, resultsLimit: 2) {
                names += page.modifications.map(\.id.recordName)
                #expect(page.deletions.isEmpty)
                pages += 1
                token = page.changeToken
            }
            #expect(names.sorted() == ["b1", "b2", "b3", "b4"])
            #expect(pages >= 2)

            var edited = try await database.record(for: records[0].id)
            for _ in 0..<3 {
                edited["title"] = "edited \(Int.random(in: 0..<1000))"
                edited = try await database.save(edited)
            }
            try await database.deleteRecord(withID: records[1].id)
            let since = try await database.recordZoneChanges(inZoneWith: readingList, since: token)
            #expect(since.modifications.map(\.id) == [records[0].id])
            #expect(since.modifications.first?["title"] == edited["title"] as String?)
            #expect(since.deletions.map(\.recordID) == [records[1].id])
            #expect(!since.moreComing)
        }
    }

    @Test func databaseChangesNameChangedAndDeletedZones() async throws {
        try await LiveServer.with { server in
            let database = try await server.container(user: "ana").privateCloudDatabase
            let history = ZoneID(zoneName: "ReadingHistory")
            _ = try await database.modifyRecordZones(saving: [RecordZone(zoneID: readingList), RecordZone(zoneID: history)], deleting: [])
            let start = try await database.databaseChanges(since: nil)
            #expect(Set(start.modifiedZoneIDs.map(\.zoneName)).isSuperset(of: ["ReadingList", "ReadingHistory"]))

            var record = Record(recordType: "Visit", recordID: Record.ID(zoneID: history))
            record["at"] = Date()
            try await database.save(record)
            try await database.deleteRecordZone(withID: readingList)
            let next = try await database.databaseChanges(since: start.changeToken)
            #expect(next.modifiedZoneIDs.map(\.zoneName) == ["ReadingHistory"])
            #expect(next.deletedZoneIDs.map(\.zoneName) == ["ReadingList"])

            let zones = try await database.allRecordZones()
            #expect(zones.map(\.zoneID.zoneName).contains("ReadingHistory"))
            #expect(!zones.map(\.zoneID.zoneName).contains("ReadingList"))
            let found = try await database.recordZone(for: history)
            #expect(found.changeToken != nil)
            let missing = try await #require(throws: NimbusError.self) { try await database.recordZone(for: readingList) }
            #expect(missing.code == .zoneNotFound)
        }
    }

    @Test func atomicBatchesFailTogether() async throws {
        try await LiveServer.with { server in
            let database = try await server.container(user: "ana").privateCloudDatabase
            try await database.save(RecordZone(zoneID: readingList))
            var existing = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "taken", zoneID: readingList))
            existing["title"] = "x"
            try await database.save(existing)

            let fresh = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "fresh", zoneID: readingList))
            let clash = Record(recordType: "Bookmark", recordID: existing.id)  // a create of an existing name
            let results = try await database.modifyRecords(saving: [fresh, clash], atomically: true)
            let freshError = results.saveResults[fresh.id].flatMap { try? $0.failureValue }
            let clashError = results.saveResults[clash.id].flatMap { try? $0.failureValue }
            #expect(freshError?.code == .batchRequestFailed)
            #expect(clashError?.code == .serverRecordChanged)
            #expect(clashError?.serverRecord?["title"] == "x")
            let lookup = try await database.records(for: [fresh.id])
            #expect(lookup[fresh.id].flatMap { try? $0.failureValue }?.code == .unknownItem)
        }
    }

    @Test func serverErrorsMapToSDKCodes() async throws {
        try await LiveServer.with { server in
            let database = try await server.container(user: "ana").privateCloudDatabase
            let zoneMissing = try await #require(throws: NimbusError.self) {
                try await database.recordZoneChanges(inZoneWith: ZoneID(zoneName: "Nope"), since: nil)
            }
            #expect(zoneMissing.code == .zoneNotFound)

            let anonymous = server.anonymousContainer().privateCloudDatabase
            let needsUser = try await #require(throws: NimbusError.self) { try await anonymous.allRecordZones() }
            #expect(needsUser.code == .notAuthenticated)

            let badToken = server.anonymousContainer().with(credentials: .apiToken("wrong")).publicCloudDatabase
            let rejected = try await #require(throws: NimbusError.self) { try await badToken.allRecordZones() }
            #expect(rejected.code == .notAuthenticated)
            #expect(rejected.httpStatus == 401)
        }
    }

    @Test func anExpiredTokenSaysSoAndRefetchingFromNilRecovers() async throws {
        try await LiveServer.with(configure: { $0.tombstoneRetention = .zero }) { server in
            let database = try await server.container(user: "ana").privateCloudDatabase
            try await database.save(RecordZone(zoneID: readingList))
            var record = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "b1", zoneID: readingList))
            record["title"] = "x"
            try await database.save(record)
            let token = try await database.recordZoneChanges(inZoneWith: readingList, since: nil).changeToken
            try await database.deleteRecord(withID: record.id)
            try await server.server.compactNow()

            let expired = try await #require(throws: NimbusError.self) {
                try await database.recordZoneChanges(inZoneWith: readingList, since: token)
            }
            #expect(expired.code == .changeTokenExpired)
            let fresh = try await database.recordZoneChanges(inZoneWith: readingList, since: nil)
            #expect(fresh.modifications.isEmpty)
        }
    }

    @Test func theRetrierSplitsBatchesTheServerFindsTooLarge() async throws {
        try await LiveServer.with { server in
            let database = try await server.container(user: "ana").privateCloudDatabase
            try await database.save(RecordZone(zoneID: readingList))
            // The server takes 400 operations per records/modify (CloudKit's limit per operation).
            let records = (0..<900).map { index in
                var record = Record(recordType: "Visit", recordID: Record.ID(recordName: "v\(index)", zoneID: readingList))
                record["n"] = index
                return record
            }
            let batches = try await Retrier().runBatched(records) { batch in
                try await database.modifyRecords(saving: batch, atomically: false).saveResults
            }
            let saved = batches.flatMap(\.values).filter { (try? $0.get()) != nil }
            #expect(saved.count == 900)
            #expect(batches.count == 4)  // 900 → 450 + 450 → 225 + 225 + 225 + 225
        }
    }

    @Test func serverToServerKeysSignRequestsToThePublicDatabase() async throws {
        try await LiveServer.with { server in
            let key = P256.Signing.PrivateKey()
            try await server.server.store.addServerKey(
                keyID: "sdk-key", container: LiveServer.containerID, publicKeyPEM: key.publicKey.pemRepresentation)
            let credentials = try Credentials.serverToServerKey(keyID: "sdk-key", privateKeyPEM: key.pemRepresentation)
            let database = server.anonymousContainer().with(credentials: credentials).publicCloudDatabase
            var news = Record(recordType: "Article", recordID: Record.ID(recordName: "a1"))
            news["title"] = "Published by the server"
            try await database.save(news)
            let readBack = try await server.anonymousContainer().publicCloudDatabase.record(for: news.id)
            #expect(readBack["title"] == "Published by the server")

            let wrongKey = try Credentials.serverToServerKey(
                keyID: "sdk-key", privateKeyPEM: P256.Signing.PrivateKey().pemRepresentation)
            let forged = try await #require(throws: NimbusError.self) {
                try await server.anonymousContainer().with(credentials: wrongKey).publicCloudDatabase.record(for: news.id)
            }
            #expect(forged.code == .notAuthenticated)
        }
    }

    @Test func aSetupChainOfOperationsRunsInOrderAgainstTheServer() async throws {
        try await LiveServer.with { server in
            let database = try await server.container(user: "ana").privateCloudDatabase
            let log = EventLog()
            let createZone = ModifyRecordZonesOperation(recordZonesToSave: [RecordZone(zoneID: readingList)])
            createZone.modifyRecordZonesResultBlock = { result in log.append("zone \((try? result.get()) != nil)") }
            var bookmark = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "b1", zoneID: readingList))
            bookmark["title"] = "hello"
            let save = ModifyRecordsOperation(recordsToSave: [bookmark])
            save.modifyRecordsResultBlock = { result in log.append("save \((try? result.get()) != nil)") }
            let fetch = FetchRecordZoneChangesOperation(recordZoneIDs: [readingList])
            fetch.recordWasChangedBlock = { id, _ in log.append("changed \(id.recordName)") }
            fetch.fetchRecordZoneChangesResultBlock = { result in log.append("fetch \((try? result.get()) != nil)") }
            let group = OperationGroup(name: "setup")
            for operation in [createZone, save, fetch] as [DatabaseOperation] {
                operation.database = database
                operation.group = group
            }
            let chain = SerialOperationChain(stopsOnFailure: true)
            chain.add(createZone, to: OperationQueue())
            chain.add(save, to: OperationQueue())
            chain.add(fetch, to: OperationQueue())
            try await log.wait(forCount: 4)
            #expect(log.events == ["zone true", "save true", "changed b1", "fetch true"])
        }
    }
}
