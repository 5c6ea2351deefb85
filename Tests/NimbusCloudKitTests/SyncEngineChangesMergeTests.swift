import Foundation
import Nimbus
import Testing

@testable import NimbusCloudKit

/// How CKSyncEngine tells several pages in one `fetchedRecordZoneChanges` event: each
/// record's last change wins, whichever page it came on.
@Suite("CKSyncEngine: pages told together")
struct SyncEngineChangesMergeTests {
    static let zone = CKRecordZone.ID(zoneName: "Contacts")

    static func id(_ name: String) -> CKRecord.ID { CKRecord.ID(recordName: name, zoneID: zone) }

    static func page(saving saved: [String], deleting deleted: [String], token: String) -> CKSyncEngine.ZoneChangesPage {
        var modifications: [CKRecord.ID: Result<CKDatabase.RecordZoneChange.Modification, any Error>] = [:]
        for name in saved {
            let record = CKRecord(recordType: "Contact", recordID: id(name))
            record["name"] = "\(name) on \(token)"
            modifications[id(name)] = .success(.init(record: record))
        }
        return (
            modifications, deleted.map { .init(recordID: id($0), recordType: "Contact") },
            CKServerChangeToken(ServerChangeToken(rawValue: token)), true
        )
    }

    @Test func aRecordsLastChangeWinsAcrossPages() {
        let pages = [
            Self.page(saving: ["a", "b", "c"], deleting: ["x"], token: "t1"),
            // b deleted after page 1 was read; x created again; c saved again.
            Self.page(saving: ["x", "c"], deleting: ["b", "y"], token: "t2"),
            Self.page(saving: ["b"], deleting: ["z"], token: "t3"),
        ]
        let (modifications, deletions) = CKSyncEngine.changes(of: pages)
        #expect(modifications.map(\.recordID.recordName) == ["a", "b", "c", "x"])
        #expect(modifications.map { $0.record["name"] as? String } == ["a on t1", "b on t3", "c on t2", "x on t2"])
        #expect(deletions.map(\.recordID.recordName) == ["y", "z"])

        // One page is told as it came, in name order.
        let (one, oneDeleted) = CKSyncEngine.changes(of: [Self.page(saving: ["q", "p"], deleting: ["r"], token: "t9")])
        #expect(one.map(\.recordID.recordName) == ["p", "q"])
        #expect(oneDeleted.map(\.recordID.recordName) == ["r"])
    }
}
