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
