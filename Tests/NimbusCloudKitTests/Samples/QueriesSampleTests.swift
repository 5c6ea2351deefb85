import Foundation
import NimbusCloudKit
import NimbusTestSupport
import Testing

/// A port of the shape of Apple's queries sample (written here, not copied): places found
/// by distance, by words and by a set of categories, through NimbusCloudKit only.
@Suite("Queries sample")
struct QueriesSampleTests {
    @Test(arguments: Engine.available)
    func placesAreFoundByDistanceByWordsAndByCategory(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let database = try await server.container(user: "ada").publicCloudDatabase
            let places: [(String, String, Double, Double, String)] = [
                ("louvre", "Louvre museum of art", 48.8606, 2.3376, "museum"),
                ("orsay", "Musée d'Orsay art gallery", 48.8600, 2.3266, "museum"),
                ("bastille", "Bastille market", 48.8532, 2.3691, "market"),
                ("versailles", "Palace of Versailles", 48.8049, 2.1204, "palace"),
            ]
            let records = places.map { name, title, latitude, longitude, category -> CKRecord in
                let record = CKRecord(recordType: "Place", recordID: CKRecord.ID(recordName: name))
                record["title"] = title
                record["location"] = CLLocation(latitude: latitude, longitude: longitude)
                record["category"] = category
                return record
            }
            _ = try await database.modifyRecords(saving: records, deleting: [])

            let center = CLLocation(latitude: 48.8584, longitude: 2.3376)
            let near = CKQuery(
                recordType: "Place",
                predicate: NSPredicate(format: "distanceToLocation:fromLocation:(location, %@) < %f", center, 5_000.0))
            let nearby = Set(try await database.records(matching: near).matchResults.map(\.0.recordName))
            #expect(nearby == ["louvre", "orsay", "bastille"])

            let words = CKQuery(recordType: "Place", predicate: NSPredicate(format: "self CONTAINS %@", "art"))
            #expect(Set(try await database.records(matching: words).matchResults.map(\.0.recordName)) == ["louvre", "orsay"])

            let chosen = CKQuery(recordType: "Place", predicate: NSPredicate(format: "category IN %@", ["market", "palace"]))
            chosen.sortDescriptors = [NSSortDescriptor(key: "title", ascending: true)]
            #expect(try await database.records(matching: chosen).matchResults.map(\.0.recordName) == ["bastille", "versailles"])
        }
    }
}
