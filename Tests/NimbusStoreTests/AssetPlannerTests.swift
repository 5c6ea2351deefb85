import Foundation
import NimbusProtocol
import NimbusStore
import Testing

/// Receipts and asset references in the modify semantics, without any I/O.
@Suite("Assets in the ModifyPlanner")
struct AssetPlannerTests {
    let zone = ZoneID(zoneName: "Z", ownerRecordName: "_alice")
    let alice = Caller(userRecordName: "_alice")
    let policy = WritePolicy(creatorOnlyWrites: false, now: 1_000)
    let database = DatabaseKey(container: "iCloud.test", environment: .development, scope: .private, owner: "_alice")
    let sha = String(repeating: "ab", count: 32)
    var checksum: String { Asset.fileChecksum(sha256Hex: sha) }

    func upload(record: String = "a", field: String = "image", user: String = "_alice", expiresAt: Int64 = 2_000, used: Bool = false)
        -> AssetUpload
    {
        AssetUpload(
            id: "u", database: database, userRecordName: user, zone: "Z", recordName: record, recordType: nil,
            fieldName: field, createdAt: 0, expiresAt: expiresAt, completion: .init(sha256: sha, size: 10, receipt: "r"),
            used: used)
    }

    func save(_ asset: Asset, name: String = "a", field: String = "image") -> RecordOperation {
        RecordOperation(type: .create, record: Record(recordName: name, recordType: "Photo", fields: [field: .asset(asset)]))
    }

    func plan(_ operations: [RecordOperation], uploads: [AssetUpload], known: [String: Int64] = [:], caller: Caller? = nil)
        -> ModifyPlan
    {
        let context = AssetContext(
            database: database, uploads: Dictionary(uniqueKeysWithValues: uploads.compactMap { upload in
                upload.completion.map { ($0.receipt, upload) }
            }), known: known)
        var planner = ModifyPlanner(
            zoneID: zone, policy: policy, caller: caller ?? alice, rows: [:], baseVersion: 0, assets: context)
        return planner.plan(operations, atomic: false)
    }

    func failure(_ plan: ModifyPlan) -> CloudKitError? {
        if case .failed(let error) = plan.results.first { return error }
        return nil
    }

    @Test func aMatchingReceiptIsSpentAndTheStoredValueLosesIt() throws {
        let result = plan([save(Asset(fileChecksum: checksum, size: 10, receipt: "r"))], uploads: [upload()])
        #expect(result.spentReceipts == ["r"])
        let written = try #require(result.writes.first)
        #expect(!written.fieldsJSON.contains("receipt"))
        #expect(AssetReferences.hashes(of: written) == [sha])
    }

    @Test func eachBindingIsChecked() {
        let asset = Asset(fileChecksum: checksum, size: 10, receipt: "r")
        let cases: [(ModifyPlan, ServerErrorCode, String)] = [
            (plan([save(asset)], uploads: [upload(user: "_bob")]), .accessDenied, "another user"),
            (plan([save(asset, name: "b")], uploads: [upload()]), .badRequest, "of record 'a'"),
            (plan([save(asset, field: "thumb")], uploads: [upload()]), .badRequest, "field 'image'"),
            (plan([save(asset)], uploads: [upload(used: true)]), .badRequest, "already used"),
            (plan([save(asset)], uploads: [upload(expiresAt: 1_000)]), .badRequest, "expired"),
            (plan([save(Asset(fileChecksum: checksum, size: 11, receipt: "r"))], uploads: [upload()]), .badRequest, "size 11"),
            (plan([save(Asset(fileChecksum: "eA==", size: 10, receipt: "r"))], uploads: [upload()]), .badRequest, "fileChecksum"),
            (plan([save(asset)], uploads: []), .badRequest, "not one this server issued"),
            (plan([save(Asset(fileChecksum: checksum, size: 10))], uploads: []), .badRequest, "no asset with fileChecksum"),
        ]
        for (result, code, phrase) in cases {
            #expect(result.writes.isEmpty)
            #expect(result.spentReceipts.isEmpty)
            #expect(failure(result)?.code == code)
            #expect(failure(result)?.reason.contains(phrase) == true, "\(failure(result)?.reason ?? "no failure")")
            #expect(failure(result)?.recordName != nil)
        }
    }

    @Test func aReceiptAttachesOnceWithinARequestAndAKnownAssetNeedsNone() {
        let asset = Asset(fileChecksum: checksum, size: 10, receipt: "r")
        let twice = plan(
            [save(asset), RecordOperation(type: .forceUpdate, record: Record(recordName: "a", recordType: "Photo", fields: ["other": .asset(asset)]))],
            uploads: [upload()])
        #expect(twice.spentReceipts == ["r"])
        let known = plan([save(Asset(fileChecksum: checksum, size: 10))], uploads: [], known: [sha: 10])
        #expect(known.writes.count == 1)
        #expect(known.spentReceipts.isEmpty)
    }

    @Test func aStoreWithoutAssetsRefusesThem() {
        var planner = ModifyPlanner(zoneID: zone, policy: policy, caller: alice, rows: [:], baseVersion: 0)
        let result = planner.plan([save(Asset(fileChecksum: checksum, size: 10, receipt: "r"))], atomic: false)
        #expect(result.writes.isEmpty)
        #expect(failure(result)?.code == .badRequest)
    }
}
