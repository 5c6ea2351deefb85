import NimbusProtocol
import NimbusStore
import Testing

/// The modify semantics without any I/O.
@Suite("ModifyPlanner")
struct ModifyPlannerTests {
    let zone = ZoneID(zoneName: "Z", ownerRecordName: "_owner")
    let caller = Caller(userRecordName: "_alice", deviceID: "phone")
    let policy = WritePolicy(creatorOnlyWrites: false, now: 1_000)

    func row(_ name: String, version: Int64, fields: [String: FieldValue] = [:], creator: String = "_alice") -> StoredRecord {
        StoredRecord(
            recordName: name, recordType: "Item", fieldsJSON: Record.fieldsJSON(fields).serialized(),
            created: RecordStamp(timestamp: 1, userRecordName: creator), modified: RecordStamp(timestamp: 1),
            version: version, createdVersion: version, deleted: false)
    }

    func operation(_ type: RecordOperationType, _ name: String, tag: String? = nil, fields: [String: FieldValue] = [:])
        -> RecordOperation
    {
        RecordOperation(
            type: type, record: Record(recordName: name, recordType: "Item", recordChangeTag: tag, fields: fields))
    }

    @Test func eachWriteGetsTheNextVersionAndTheTagIsTheVersion() {
        var planner = ModifyPlanner(zoneID: zone, policy: policy, caller: caller, rows: [:], baseVersion: 41)
        let plan = planner.plan([operation(.create, "a"), operation(.create, "b")], atomic: false)
        #expect(plan.writes.map(\.version) == [42, 43])
        #expect(plan.lastVersion == 43)
        #expect(plan.writes.first?.changeTag == String(42, radix: 36))
        #expect(plan.writes.first?.modified.deviceID == "phone")
    }

    @Test func atomicFailureWritesNothingAndKeepsTheBaseVersion() {
        var planner = ModifyPlanner(
            zoneID: zone, policy: policy, caller: caller, rows: ["b": row("b", version: 5)], baseVersion: 10)
        let plan = planner.plan([operation(.create, "a"), operation(.create, "b")], atomic: true)
        #expect(plan.writes.isEmpty)
        #expect(plan.lastVersion == 10)
        #expect(plan.failedAtomically)
        guard case .failed(let first) = plan.results[0], case .failed(let second) = plan.results[1] else {
            Issue.record("both should fail")
            return
        }
        #expect(first.code == .atomicError)
        #expect(second.code == .exists)
    }

    @Test func creatorOnlyWritesRefuseOtherUsers() {
        let publicPolicy = WritePolicy(creatorOnlyWrites: true, now: 1_000)
        let existing = row("a", version: 3, creator: "_bob")
        var planner = ModifyPlanner(zoneID: zone, policy: publicPolicy, caller: caller, rows: ["a": existing], baseVersion: 3)
        let plan = planner.plan([operation(.forceUpdate, "a", fields: ["x": 1])], atomic: false)
        guard case .failed(let error) = plan.results[0] else {
            Issue.record("should fail")
            return
        }
        #expect(error.code == .accessDenied)
        let admin = Caller(userRecordName: "_server", isAdmin: true)
        var adminPlanner = ModifyPlanner(zoneID: zone, policy: publicPolicy, caller: admin, rows: ["a": existing], baseVersion: 3)
        #expect(adminPlanner.plan([operation(.forceUpdate, "a")], atomic: false).writes.count == 1)
    }

    @Test func publicGrantsDecideCreatesAndWritesByRecordType() {
        // Items: CloudKit's defaults. Notices: only read by anyone. Pages: any user writes.
        let access = PublicAccess(grantsByType: [
            "Notice": [Grant(.read, to: "_world")],
            "Page": [Grant(.read, to: "_world"), Grant(.create, to: "_icloud"), Grant(.write, to: "_icloud")],
        ])
        let publicPolicy = WritePolicy(publicAccess: access, now: 1_000)
        var page = row("page", version: 2, creator: "_bob")
        page.recordType = "Page"
        let rows = [
            "bobs": row("bobs", version: 1, creator: "_bob"), "bobs2": row("bobs2", version: 1, creator: "_bob"),
            "page": page,
        ]
        func results(_ operations: [RecordOperation], as caller: Caller) -> [String] {
            var planner = ModifyPlanner(zoneID: zone, policy: publicPolicy, caller: caller, rows: rows, baseVersion: 2)
            return planner.plan(operations, atomic: false).results.map { result in
                if case .failed(let error) = result { return error.code.rawValue }
                return "ok"
            }
        }
        let notice = RecordOperation(type: .create, record: Record(recordName: "n", recordType: "Notice"))
        let edit = RecordOperation(type: .forceUpdate, record: Record(recordName: "page", recordType: "Page"))
        let operations = [
            operation(.create, "mine"), operation(.forceUpdate, "bobs"), operation(.forceDelete, "bobs2"), notice, edit,
        ]
        #expect(results(operations, as: caller) == ["ok", "ACCESS_DENIED", "ACCESS_DENIED", "ACCESS_DENIED", "ok"])
        #expect(results(operations, as: Caller(userRecordName: "_server", isAdmin: true)) == ["ok", "ok", "ok", "ok", "ok"])
        #expect(results([operation(.forceDelete, "bobs")], as: Caller(userRecordName: "_bob")) == ["ok"])
        #expect(results([operation(.delete, "missing", tag: "1")], as: caller) == ["NOT_FOUND"])
    }

    @Test func publicAccessReadsAndExplainsDenials() {
        let access = PublicAccess(grantsByType: [
            "Diary": [Grant(.create, to: "_icloud"), Grant(.write, to: "_creator")],
            "Roster": [Grant(.read, to: "_icloud"), Grant(.read, to: "editors")],
        ])
        #expect(access.allows(.read, "Item", creator: nil, accessor: .anonymous), "defaults: everyone reads")
        #expect(!access.allows(.create, "Item", creator: nil, accessor: .anonymous))
        #expect(access.allows(.read, "Diary", creator: "_a", accessor: .user("_a")), "WRITE includes READ")
        #expect(!access.allows(.read, "Diary", creator: "_a", accessor: .user("_b")))
        #expect(access.readsOnlyOwnRecords("Diary", accessor: .user("_b")))
        #expect(!access.readsOnlyOwnRecords("Roster", accessor: .user("_b")))
        #expect(access.allows(.read, "Roster", creator: nil, accessor: .user("_b")))
        #expect(!access.allows(.read, "Roster", creator: nil, accessor: .anonymous))
        #expect(access.allows(.write, "Roster", creator: nil, accessor: .admin))
        let denial = access.denial(.read, "Roster", accessor: .anonymous)
        #expect(denial.code == .accessDenied)
        #expect(
            denial.reason
                == "reading records of type 'Roster' in the public database needs READ, which the schema grants to "
                + "_icloud (signed-in users), editors (no user holds it); a caller who is not signed in holds none of "
                + "them (a server-to-server key may do everything)")
    }

    @Test func cascadeTombstonesChildrenOnce() {
        let parent = row("p", version: 1)
        let child = row("c", version: 2)
        var planner = ModifyPlanner(zoneID: zone, policy: policy, caller: caller, rows: ["p": parent], baseVersion: 2)
        var plan = planner.plan([operation(.forceDelete, "p")], atomic: false)
        #expect(plan.deletedNames == ["p"])
        plan = planner.cascade(children: [child])
        #expect(plan.deletedNames == ["c"])
        #expect(plan.writes.map(\.recordName) == ["p", "c"])
        #expect(plan.writes.allSatisfy { $0.deleted })
        plan = planner.cascade(children: [child])
        #expect(plan.deletedNames.isEmpty)
    }
}
