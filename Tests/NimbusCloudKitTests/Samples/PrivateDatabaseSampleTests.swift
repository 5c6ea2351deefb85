import Foundation
import NimbusCloudKit
import NimbusTestSupport
import Testing

/// A port of the shape of Apple's private-database sample (written here, not copied): the
/// app keeps the last person entered in a custom zone of the user's private database. It
/// creates the zone on first use (a save into a missing zone is `zoneNotFound`), saves, reads
/// back, edits through the fetched record (a stale copy is `serverRecordChanged`, with the
/// server's record to retry from), and deletes, through NimbusCloudKit only.
@Suite("Private-database sample")
struct PrivateDatabaseSampleTests {
    static let zoneID = CKRecordZone.ID(zoneName: "People")
    static let lastPersonID = CKRecord.ID(recordName: "lastPerson", zoneID: zoneID)

    @Test(arguments: Engine.available)
    func theLastPersonIsSavedReadEditedAndDeleted(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let container = try await server.container(user: "ada")
            #expect(try await container.accountStatus() == .available)
            let database = container.privateCloudDatabase

            // First launch: the zone does not exist yet.
            let first = CKRecord(recordType: "Person", recordID: Self.lastPersonID)
            first["name"] = "Grace"
            do {
                _ = try await database.save(first)
                Issue.record("a record was saved into a zone that does not exist")
            } catch let error as CKError where error.code == .zoneNotFound {
                _ = try await database.modifyRecordZones(saving: [CKRecordZone(zoneID: Self.zoneID)], deleting: [])
            }
            let saved = try await database.save(first)
            #expect(saved.recordChangeTag != nil)
            #expect(saved.creatorUserRecordID != nil)

            // Next launch: read it back, edit the fetched record.
            let fetched = try await database.record(for: Self.lastPersonID)
            #expect(fetched["name"] as? String == "Grace")
            fetched["name"] = "Ada"
            _ = try await database.save(fetched)

            // A copy fetched before that edit is stale: the server's record comes with the error.
            let stale = saved
            stale["name"] = "Katherine"
            do {
                _ = try await database.save(stale)
                Issue.record("a stale record overwrote a newer one")
            } catch let error as CKError where error.code == .serverRecordChanged {
                let server = try #require(error.serverRecord)
                #expect(server["name"] as? String == "Ada")
                server["name"] = "Katherine"
                _ = try await database.save(server)
            }
            #expect(try await database.record(for: Self.lastPersonID)["name"] as? String == "Katherine")

            // Delete it: the next read is unknownItem.
            #expect(try await database.deleteRecord(withID: Self.lastPersonID) == Self.lastPersonID)
            do {
                _ = try await database.record(for: Self.lastPersonID)
                Issue.record("a deleted record was read")
            } catch let error as CKError {
                #expect(error.code == .unknownItem)
            }
        }
    }
}
