import Crypto
import Foundation
import Nimbus
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// The public database's per-record-type permissions through the SDK: users get
/// `permissionFailure` with the server's reason; a server-to-server key (the admin role) may
/// do everything.
@Suite("Public database permissions through the SDK")
struct PublicPermissionsSDKTests {
    @Test func theAdminKeyDoesEverythingAndUsersAreToldWhatTheyLack() async throws {
        try await LiveServer.with { server in
            // The development schema: announcements are read by everyone and written by nobody
            // but the admin.
            let store = server.server.store
            let current = try await store.schema(container: LiveServer.containerID, environment: .development)
            var schema = current.schema
            schema.recordTypes["Announcement"] = RecordTypeSchema(
                fields: ["title": FieldSchema(type: .string)], grants: [Grant(.read, to: "_world")])
            _ = try await store.updateSchema(
                schema, container: LiveServer.containerID, environment: .development, expectedVersion: current.version)
            let key = P256.Signing.PrivateKey()
            try await store.addServerKey(
                keyID: "admin", container: LiveServer.containerID, publicKeyPEM: key.publicKey.pemRepresentation)
            let admin = server.anonymousContainer().with(
                credentials: try .serverToServerKey(keyID: "admin", privateKeyPEM: key.pemRepresentation))
            let ada = try await server.container(user: "ada")

            var news = Record(recordType: "Announcement", recordID: Record.ID(recordName: "n1"))
            news["title"] = "Hello"
            let denied = try await #require(throws: NimbusError.self) { try await ada.publicCloudDatabase.save(news) }
            #expect(denied.code == .permissionFailure)
            #expect(denied.message.contains("needs CREATE, which the schema grants to no role"), "\(denied.message)")
            _ = try await admin.publicCloudDatabase.save(news)

            var read = try await server.anonymousContainer().publicCloudDatabase.record(for: news.id)
            #expect(read["title"] == "Hello")
            read["title"] = "Edited"
            let edit = try await #require(throws: NimbusError.self) { try await ada.publicCloudDatabase.save(read) }
            #expect(edit.code == .permissionFailure)
            #expect(edit.message.contains("needs WRITE"))

            // The admin also changes what a user created (CloudKit's default grants elsewhere).
            var article = Record(recordType: "Article", recordID: Record.ID(recordName: "a1"))
            article["title"] = "By Ada"
            let saved = try await ada.publicCloudDatabase.save(article)
            var moderated = saved
            moderated["title"] = "Moderated"
            #expect(try await admin.publicCloudDatabase.save(moderated)["title"] == "Moderated")
            #expect(try await admin.publicCloudDatabase.deleteRecord(withID: article.id) == article.id)
        }
    }
}
