import Foundation
import NimbusProtocol
import NimbusStore
import NimbusTestSupport
import Testing

/// The public key directory of end-to-end encryption (docs/ENCRYPTION.md, "The key
/// directory") on both engines: an entry `keys-<user record name>` of type `NimbusUserKeys` is
/// written only by the user it names, so no one can claim another user's entry first (which
/// would leave that user unable to publish, and no one able to share with them) or overwrite it.
@Suite("Key directory rules")
struct KeyDirectoryRulesTests {
    static func entry(_ type: String, _ name: String, _ recordType: String = KeyDirectoryRules.recordType, tag: String? = nil)
        -> JSON
    {
        var record: [String: JSON] = [
            "recordName": .string(name), "recordType": .string(recordType),
            "fields": ["sharingKey": ["value": .string(Data(repeating: 7, count: 32).base64EncodedString()), "type": "BYTES"]],
        ]
        if let tag { record["recordChangeTag"] = .string(tag) }
        return ["operationType": .string(type), "record": .object(record)]
    }

    /// The error code of a modify's first record, or of the whole request.
    static func code(_ reply: TestClient.Reply) -> String? {
        reply.serverErrorCode ?? reply.records.first?["serverErrorCode"]?.string
    }

    @Test(arguments: Engine.available) func onlyTheUserAnEntryNamesCreatesOrChangesIt(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let aliceName = try #require(alice.userRecordName)
            let bobName = try #require(bob.userRecordName)

            // Bob cannot claim Alice's entry before she publishes it, under any type, nor make an
            // entry of the directory's type under another name.
            for attempt in [
                Self.entry("create", "keys-" + aliceName), Self.entry("create", "keys-" + aliceName, "Note"),
                Self.entry("forceUpdate", "keys-" + aliceName), Self.entry("create", "my-keys"),
            ] {
                let reply = try await bob.modify("_defaultZone", [attempt], scope: "public")
                #expect(Self.code(reply) == "ACCESS_DENIED", "\(attempt): \(reply.text)")
            }
            let lookup = try await bob.post(
                "records/lookup", ["records": [["recordName": .string("keys-" + aliceName)]]], scope: "public")
            #expect(lookup.records.first?["serverErrorCode"] == "NOT_FOUND")

            // Alice publishes hers; Bob can neither replace nor delete it.
            let published = try await alice.modify("_defaultZone", [Self.entry("create", "keys-" + aliceName)], scope: "public")
            let tag = try #require(published.records.first?["recordChangeTag"]?.string, "\(published.text)")
            for attempt in [
                Self.entry("update", "keys-" + aliceName, tag: tag), Self.entry("forceReplace", "keys-" + aliceName),
                ["operationType": "forceDelete", "record": ["recordName": .string("keys-" + aliceName)]],
            ] {
                let reply = try await bob.modify("_defaultZone", [attempt], scope: "public")
                #expect(Self.code(reply) == "ACCESS_DENIED", "\(attempt): \(reply.text)")
            }
            let after = try await bob.post(
                "records/lookup", ["records": [["recordName": .string("keys-" + aliceName)]]], scope: "public")
            #expect(after.records.first?["recordChangeTag"]?.string == tag)
            #expect(after.records.first?["created"]?["userRecordName"]?.string == aliceName)

            // Bob publishes his own entry, and updates it.
            let bobs = try await bob.modify("_defaultZone", [Self.entry("create", "keys-" + bobName)], scope: "public")
            let bobsTag = try #require(bobs.records.first?["recordChangeTag"]?.string, "\(bobs.text)")
            let updated = try await bob.modify(
                "_defaultZone", [Self.entry("update", "keys-" + bobName, tag: bobsTag)], scope: "public")
            #expect(Self.code(updated) == nil, "\(updated.text)")
            // The rule is the public database's: a private zone's records are the user's own.
            _ = try await bob.createZone("Notes")
            let privately = try await bob.modify("Notes", [Self.entry("create", "keys-" + aliceName)])
            #expect(Self.code(privately) == nil, "\(privately.text)")
        }
    }
}
