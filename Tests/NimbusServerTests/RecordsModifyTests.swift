import NimbusProtocol
import NimbusTestSupport
import Testing

@Suite("records/modify")
struct RecordsModifyTests {
    @Test(arguments: Engine.available) func createReturnsRecordWithSystemFieldsAndTypes(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice", device: "phone")
            _ = try await alice.createZone("Notes")
            let reply = try await alice.modify("Notes", [op("create", "n1", "Note", fields: ["title": "Hi", "count": 3])])
            #expect(reply.status == 200)
            let record = try #require(reply.records.first)
            #expect(record["recordName"] == "n1")
            #expect(record["recordType"] == "Note")
            #expect(record["recordChangeTag"]?.string?.isEmpty == false)
            #expect(record["fields"]?["title"] == ["value": "Hi", "type": "STRING"])
            #expect(record["fields"]?["count"] == ["value": 3, "type": "INT64"])
            #expect(record["created"]?["userRecordName"]?.string == alice.userRecordName)
            #expect(record["created"]?["deviceID"] == "phone")
            #expect(record["zoneID"]?["zoneName"] == "Notes")
        }
    }

    @Test(arguments: Engine.available) func createOfExistingRecordFailsWithExists(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            _ = try await alice.modify("Z", [op("create", "r", fields: ["a": 1])])
            let reply = try await alice.modify("Z", [op("create", "r", fields: ["a": 2])])
            #expect(reply.records.first?["serverErrorCode"] == "EXISTS")
            #expect(reply.records.first?["recordName"] == "r")
            let lookup = try await alice.post("records/lookup", ["zoneID": ["zoneName": "Z"], "records": [["recordName": "r"]]])
            #expect(lookup.records.first?["fields"]?["a"]?["value"] == 1)
        }
    }

    @Test(arguments: Engine.available) func staleChangeTagConflictsWithServerRecordAndOverwritesNothing(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let created = try await alice.modify("Z", [op("create", "r", fields: ["title": "v1"])])
            let tag1 = try #require(created.records.first?["recordChangeTag"]?.string)
            let updated = try await alice.modify("Z", [op("update", "r", fields: ["title": "v2"], tag: tag1)])
            let tag2 = try #require(updated.records.first?["recordChangeTag"]?.string)
            #expect(tag1 != tag2)

            // A second device still holds tag1.
            let stale = try await alice.modify("Z", [op("update", "r", fields: ["title": "v3"], tag: tag1)])
            let item = try #require(stale.records.first)
            #expect(item["serverErrorCode"] == "CONFLICT")
            #expect(item["serverRecord"]?["fields"]?["title"]?["value"] == "v2")
            #expect(item["serverRecord"]?["recordChangeTag"]?.string == tag2)

            let staleDelete = try await alice.modify("Z", [op("delete", "r", tag: tag1)])
            #expect(staleDelete.records.first?["serverErrorCode"] == "CONFLICT")

            let lookup = try await alice.post("records/lookup", ["zoneID": ["zoneName": "Z"], "records": [["recordName": "r"]]])
            #expect(lookup.records.first?["fields"]?["title"]?["value"] == "v2")
        }
    }

    /// CloudKit JS's `deleteRecords` sends `{operationType: "delete", record: {recordName}}`:
    /// no tag deletes by name, as `forceDelete` does; a tag given is still checked.
    @Test(arguments: Engine.available) func aDeleteWithoutAChangeTagDeletesByNameAndATagGivenMustMatch(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let created = try await alice.modify("Z", [op("create", "a"), op("create", "b"), op("create", "c")])
            let tags = created.records.compactMap { $0["recordChangeTag"]?.string }
            #expect(tags.count == 3)
            _ = try await alice.modify("Z", [op("forceUpdate", "b", fields: ["n": 2])])

            let deletes: [JSON] = [
                ["operationType": "delete", "record": ["recordName": "a"]],
                ["operationType": "delete", "record": ["recordName": "b", "recordChangeTag": .string(tags[1])]],
                ["operationType": "delete", "record": ["recordName": "c", "recordChangeTag": .string(tags[2])]],
                ["operationType": "delete", "record": ["recordName": "missing"]],
            ]
            let reply = try await alice.post("records/modify", ["zoneID": ["zoneName": "Z"], "operations": .array(deletes)])
            #expect(reply.status == 200, "\(reply.text)")
            let items = reply.records
            #expect(items.count == 4)
            #expect(items[0]["deleted"] == true && items[0]["recordName"] == "a", "no tag: deleted by name")
            #expect(items[1]["serverErrorCode"] == "CONFLICT", "a stale tag given still conflicts")
            #expect(items[1]["serverRecord"]?["fields"]?["n"]?["value"] == 2)
            #expect(items[2]["deleted"] == true, "a current tag deletes")
            #expect(items[3]["serverErrorCode"] == "NOT_FOUND")

            let lookup = try await alice.post(
                "records/lookup", ["zoneID": ["zoneName": "Z"], "records": [["recordName": "a"], ["recordName": "b"]]])
            #expect(lookup.records.first?["serverErrorCode"] == "NOT_FOUND")
            #expect(lookup.records.last?["recordName"] == "b" && lookup.records.last?["serverErrorCode"] == nil)
        }
    }

    @Test(arguments: Engine.available) func updateKeepsUnsentFieldsAndReplaceClearsThem(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let created = try await alice.modify("Z", [op("create", "r", fields: ["a": "1", "b": "2"])])
            let tag = try #require(created.records.first?["recordChangeTag"]?.string)
            let updated = try await alice.modify("Z", [op("update", "r", fields: ["a": "one"], tag: tag)])
            let fields = try #require(updated.records.first?["fields"]?.object)
            #expect(fields["a"]?["value"] == "one")
            #expect(fields["b"]?["value"] == "2")

            let tag2 = try #require(updated.records.first?["recordChangeTag"]?.string)
            let replaced = try await alice.modify("Z", [op("replace", "r", fields: ["c": "3"], tag: tag2)])
            let replacedFields = try #require(replaced.records.first?["fields"]?.object)
            #expect(replacedFields.keys.sorted() == ["c"])
        }
    }

    @Test(arguments: Engine.available) func forceOperationsIgnoreTheChangeTagAndCreateWhenMissing(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let forced = try await alice.modify("Z", [op("forceUpdate", "new", fields: ["a": 1])])
            #expect(forced.records.first?["recordName"] == "new")
            let again = try await alice.modify("Z", [op("forceReplace", "new", fields: ["b": 2], tag: "bogus")])
            #expect(again.records.first?["fields"]?.object?.keys.sorted() == ["b"])
            let deleted = try await alice.modify("Z", [op("forceDelete", "new")])
            #expect(deleted.records.first?["deleted"] == true)
            let missing = try await alice.modify("Z", [op("forceDelete", "new")])
            #expect(missing.records.first?["serverErrorCode"] == "NOT_FOUND")
        }
    }

    @Test(arguments: Engine.available) func lockedOperationsNeedATag(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            _ = try await alice.modify("Z", [op("create", "r", fields: ["a": 1])])
            let reply = try await alice.modify("Z", [op("update", "r", fields: ["a": 2])])
            #expect(reply.records.first?["serverErrorCode"] == "BAD_REQUEST")
            let missing = try await alice.modify("Z", [op("update", "ghost", fields: ["a": 2], tag: "1")])
            #expect(missing.records.first?["serverErrorCode"] == "NOT_FOUND")
        }
    }

    @Test(arguments: Engine.available) func perItemResultsComeInRequestOrderAndNonAtomicBatchesApplyWhatTheyCan(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            _ = try await alice.modify("Z", [op("create", "b", fields: ["x": 1])])
            let reply = try await alice.modify(
                "Z", [op("create", "a", fields: ["x": 1]), op("create", "b", fields: ["x": 2]), op("create", "c")],
                atomic: false)
            #expect(reply.records.map { $0["recordName"]?.string } == ["a", "b", "c"])
            #expect(reply.records[0]["serverErrorCode"] == nil)
            #expect(reply.records[1]["serverErrorCode"] == "EXISTS")
            #expect(reply.records[2]["serverErrorCode"] == nil)
            let lookup = try await alice.post(
                "records/lookup", ["zoneID": ["zoneName": "Z"], "records": [["recordName": "a"], ["recordName": "c"]]])
            #expect(lookup.records.allSatisfy { $0["serverErrorCode"] == nil })
        }
    }

    @Test(arguments: Engine.available) func atomicBatchInACustomZoneIsAllOrNothing(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            _ = try await alice.modify("Z", [op("create", "b", fields: ["x": 1])])
            let before = try await alice.changes("Z")
            let reply = try await alice.modify(
                "Z", [op("create", "a", fields: ["x": 1]), op("create", "b", fields: ["x": 2]), op("create", "c")],
                atomic: true)
            #expect(reply.records.map { $0["serverErrorCode"]?.string } == ["ATOMIC_ERROR", "EXISTS", "ATOMIC_ERROR"])
            let lookup = try await alice.post(
                "records/lookup", ["zoneID": ["zoneName": "Z"], "records": [["recordName": "a"], ["recordName": "c"]]])
            #expect(lookup.records.allSatisfy { $0["serverErrorCode"] == "NOT_FOUND" })
            // Nothing reached the change log either.
            let after = try await alice.changes("Z", since: before["syncToken"]?.string)
            #expect(after.records.isEmpty)
        }
    }

    @Test(arguments: Engine.available) func desiredKeysLimitTheReturnedFields(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let reply = try await alice.post(
                "records/modify",
                [
                    "zoneID": ["zoneName": "Z"], "desiredKeys": ["a"],
                    "operations": [op("create", "r", fields: ["a": 1, "b": 2])],
                ])
            #expect(reply.records.first?["fields"]?.object?.keys.sorted() == ["a"])
            let changes = try await alice.post("records/changes", ["zoneID": ["zoneName": "Z"], "desiredKeys": ["b"]])
            #expect(changes.records.first?["fields"]?.object?.keys.sorted() == ["b"])
        }
    }

    @Test(arguments: Engine.available) func missingZoneIsZoneNotFound(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let reply = try await alice.modify("Nope", [op("create", "r")])
            #expect(reply.status == 404)
            #expect(reply.serverErrorCode == "ZONE_NOT_FOUND")
            let changes = try await alice.changes("Nope")
            #expect(changes.serverErrorCode == "ZONE_NOT_FOUND")
        }
    }
}
