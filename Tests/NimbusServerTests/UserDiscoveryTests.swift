import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// `users/discover`, `users/lookup/email`, `users/lookup/id` and `users/discoverability`:
/// only users who opted in are ever found, and no answer tells anything about anyone else.
@Suite("User discovery")
struct UserDiscoveryTests {
    @Test(arguments: Engine.available) func onlyUsersWhoOptedInAreFoundAndNoOtherAddressLeaks(engine: Engine)
        async throws
    {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let carol = try await server.user("carol")
            let optIn = try await alice.post("users/discoverability", ["discoverable": true])
            #expect(optIn.json == ["discoverable": true, "userRecordName": .string(alice.userRecordName!)])

            let reply = try await carol.post(
                "users/discover",
                [
                    "lookupInfos": [
                        ["emailAddress": "ALICE@Example.com"], ["emailAddress": "bob@example.com"],
                        ["emailAddress": "nobody@example.com"], ["userRecordName": .string(alice.userRecordName!)],
                        ["userRecordName": .string(bob.userRecordName!)], ["userRecordName": "_nobody"],
                        ["phoneNumber": "+1 555 0100"],
                    ]
                ], scope: "public")
            #expect(reply.status == 200)
            let aliceName = JSON.string(alice.userRecordName!)
            #expect(
                reply["users"]
                    == [
                        [
                            "userRecordName": aliceName, "nameComponents": ["givenName": "Alice"],
                            "lookupInfo": ["emailAddress": "ALICE@Example.com"],
                        ],
                        [
                            "userRecordName": aliceName, "nameComponents": ["givenName": "Alice"],
                            "lookupInfo": ["userRecordName": aliceName],
                        ],
                    ])
            // Bob did not opt in: nothing about him comes back, not even that he exists; and
            // Alice's address appears only as Carol spelled it.
            #expect(!reply.text.contains(bob.userRecordName!))
            #expect(!reply.text.contains("bob@example.com"))
            #expect(!reply.text.contains("alice@example.com"))

            // The same answer in the private database, and to Bob.
            let fromPrivate = try await bob.post(
                "users/discover", ["lookupInfos": [["emailAddress": "alice@example.com"]]], scope: "private")
            #expect(fromPrivate["users"]?.array?.first?["userRecordName"] == aliceName)
        }
    }

    /// "Discovering All User Identities": CloudKit JS's `discoverAllUserIdentities()` sends
    /// `GET …/public/users/discover`, no body, for the discoverable users in the caller's
    /// address book. Nimbus has no address books: the list is empty, even beside users who
    /// opted in; it still needs a caller who may discover.
    @Test(arguments: Engine.available) func aGETDiscoversTheCallersContactsOfWhichNimbusHasNone(engine: Engine)
        async throws
    {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let carol = try await server.user("carol")
            _ = try await alice.post("users/discoverability", ["discoverable": true])

            let reply = try await carol.get("users/discover", scope: "public")
            #expect(reply.status == 200, "\(reply.text)")
            #expect(reply.json == ["users": []])
            #expect(!reply.text.contains(alice.userRecordName!))

            let anonymous = try await server.anonymous().get("users/discover", scope: "public")
            #expect(anonymous.status == 421)
            #expect(anonymous.serverErrorCode == "AUTHENTICATION_REQUIRED")
            // The older "Fetching Contacts" (POST users/lookup/contacts, no body) alike.
            let contacts = try await carol.postRaw("users/lookup/contacts", "", scope: "public")
            #expect(contacts.status == 200, "\(contacts.text)")
            #expect(contacts.json == ["users": []])
            let anonymousContacts = try await server.anonymous().post("users/lookup/contacts", [:], scope: "public")
            #expect(anonymousContacts.serverErrorCode == "AUTHENTICATION_REQUIRED")
            // The POST form still needs its lookup infos.
            let empty = try await carol.post("users/discover", [:], scope: "public")
            #expect(empty.serverErrorCode == "BAD_REQUEST")
        }
    }

    @Test(arguments: Engine.available) func lookupsByEmailAndByIDHaveCloudKitsShapes(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            _ = try await server.server.store.setDiscoverable(true, userName: "alice", container: TestServer.container)
            let aliceName = JSON.string(alice.userRecordName!)

            let byEmail = try await bob.post(
                "users/lookup/email",
                ["users": [["emailAddress": "bob@example.com"], ["emailAddress": "Alice@example.com"]]], scope: "public"
            )
            #expect(byEmail.status == 200)
            #expect(
                byEmail["users"]
                    == [["userRecordName": aliceName, "firstName": "Alice", "emailAddress": "Alice@example.com"]])

            let byID = try await bob.post(
                "users/lookup/id",
                ["users": [["userRecordName": .string(bob.userRecordName!)], ["userRecordName": aliceName]]],
                scope: "public")
            #expect(byID["users"] == [["userRecordName": aliceName, "firstName": "Alice"]])
            #expect(!byID.text.contains("@"), "a lookup by record name never carries an email address")
        }
    }

    @Test(arguments: Engine.available) func optingOutHidesAUserAgainAndTheChoiceIsPerContainer(engine: Engine)
        async throws
    {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            func found() async throws -> Bool {
                let reply = try await bob.post(
                    "users/lookup/email", ["users": [["emailAddress": "alice@example.com"]]], scope: "public")
                return reply["users"]?.array?.isEmpty == false
            }
            #expect(try await alice.get("users/discoverability")["discoverable"] == false, "new users are hidden")
            #expect(try await !found())
            _ = try await alice.post("users/discoverability", ["discoverable": true])
            #expect(try await found())
            #expect(try await alice.get("users/discoverability")["discoverable"] == true)
            #expect(
                try await alice.post("users/discoverability", [:])["discoverable"] == true, "POST without a value reads"
            )
            _ = try await alice.post("users/discoverability", ["discoverable": false])
            #expect(try await !found())

            // Alice opts in again here, but in another container she stays hidden.
            _ = try await alice.post("users/discoverability", ["discoverable": true])
            let other = "iCloud.com.example.other"
            let otherAPI = try await server.server.store.createContainer(other)
            let aliceThere = try await server.server.store.createUser(
                name: "alice", email: nil, firstName: nil, lastName: nil, container: other)
            let bobThere = try await server.server.store.createUser(
                name: "bob", email: nil, firstName: nil, lastName: nil, container: other)
            let bobClient = TestClient(
                baseURL: server.server.baseURL, container: other, apiToken: otherAPI.token,
                webAuthToken: bobThere.token)
            let there = try await bobClient.post(
                "users/discover",
                [
                    "lookupInfos": [
                        ["emailAddress": "alice@example.com"], ["userRecordName": .string(aliceThere.user!.recordName)],
                    ]
                ], scope: "public")
            #expect(there["users"] == [])
            _ = try await server.server.store.setDiscoverable(true, userName: "alice", container: other)
            let nowThere = try await bobClient.post(
                "users/lookup/email", ["users": [["emailAddress": "alice@example.com"]]], scope: "public")
            #expect(nowThere["users"]?.array?.first?["userRecordName"] == .string(aliceThere.user!.recordName))
            #expect(aliceThere.user!.recordName != alice.userRecordName)

            await #expect(throws: AccountError.self) {
                _ = try await server.server.store.setDiscoverable(true, userName: "zoe", container: other)
            }
        }
    }

    @Test(arguments: Engine.available) func discoveryNeedsASignedInCallerAndWellFormedLookups(engine: Engine)
        async throws
    {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let anonymous = server.anonymous()
            let lookup: JSON = ["lookupInfos": [["emailAddress": "alice@example.com"]]]
            #expect(
                try await anonymous.post("users/discover", lookup, scope: "public").serverErrorCode
                    == "AUTHENTICATION_REQUIRED")
            #expect(
                try await anonymous.get("users/discoverability", scope: "public").serverErrorCode
                    == "AUTHENTICATION_REQUIRED")

            func badRequest(_ operation: String, _ body: JSON) async throws -> String {
                let reply = try await alice.post(operation, body, scope: "public")
                #expect(reply.status == 400, "\(operation) \(body.serialized())")
                return "\(reply.serverErrorCode ?? "") \(reply["reason"]?.string ?? "")"
            }
            #expect(try await badRequest("users/discover", [:]).contains("lookupInfos"))
            #expect(try await badRequest("users/discover", ["lookupInfos": [[:]]]).contains("'lookupInfos[0]' needs"))
            #expect(
                try await badRequest("users/discover", ["lookupInfos": [["email": "a@b.c"]]])
                    .contains("'lookupInfos[0].email' is not a lookup key"))
            #expect(
                try await badRequest("users/lookup/id", ["users": [["emailAddress": "a@b.c"]]])
                    .contains("expected userRecordName"))
            #expect(
                try await badRequest("users/lookup/email", ["users": [["emailAddress": 7]]])
                    .contains("users[0].emailAddress"))
            #expect(try await badRequest("users/discoverability", ["discoverable": "yes"]).contains("discoverable"))
            let tooMany = JSON.array(Array(repeating: ["emailAddress": "a@b.c"], count: 201))
            #expect(try await badRequest("users/discover", ["lookupInfos": tooMany]).hasPrefix("LIMIT_EXCEEDED"))
        }
    }
}
