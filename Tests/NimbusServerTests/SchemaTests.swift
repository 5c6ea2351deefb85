import Logging
import NimbusEngines
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Schema environments: just-in-time schema in development, export, deploy, and production
/// refusing what the deployed schema does not have.
@Suite("Schema environments")
struct SchemaTests {
    static let container = TestServer.container

    @Test(arguments: Engine.available) func developmentCreatesRecordTypesAndFieldsOnFirstSave(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let saved = try await alice.modify(
                "_defaultZone",
                [typedOp("create", "a1", "Article", ["title": ("Hello", "STRING"), "order": (1, "INT64"), "tags": (["x"], "STRING_LIST")])])
            #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.text)")
            let schema = try await server.server.store.schema(container: Self.container, environment: .development)
            let article = try #require(schema.schema.recordTypes["Article"])
            #expect(article.fields["title"] == FieldSchema(type: .string))
            #expect(article.fields["order"] == FieldSchema(type: .int64))
            #expect(article.fields["tags"] == FieldSchema(type: .stringList))
            #expect(article.grants == Grant.defaults)
            // Production knows nothing of it until a deploy.
            #expect(try await server.server.store.schema(container: Self.container, environment: .production).version == 0)
        }
    }

    @Test(arguments: Engine.available) func changingAFieldsTypeIsBadRequestEvenInDevelopment(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.modify("_defaultZone", [typedOp("create", "a1", "Article", ["order": (1, "INT64")])])
            let reply = try await alice.modify("_defaultZone", [typedOp("create", "a2", "Article", ["order": ("first", "STRING")])])
            #expect(reply.status == 400)
            #expect(reply.serverErrorCode == "BAD_REQUEST")
            #expect(reply.reason.contains("field 'order' of record type 'Article' is INT64"), "\(reply.reason)")
            // Nothing was written.
            let lookup = try await alice.post("records/lookup", ["records": [["recordName": "a2"]]])
            #expect(lookup.records.first?["serverErrorCode"] == "NOT_FOUND")
            // An untyped integer for a DOUBLE field is stored as a DOUBLE.
            _ = try await alice.modify("_defaultZone", [typedOp("create", "a3", "Article", ["ratio": (.double(0.5), "DOUBLE")])])
            let coerced = try await alice.modify("_defaultZone", [op("create", "a4", "Article", fields: ["ratio": 2])])
            #expect(coerced.records.first?["fields"]?["ratio"] == ["value": 2, "type": "DOUBLE"])
            // System field names are reserved.
            let reserved = try await alice.modify("_defaultZone", [op("create", "a5", "Article", fields: ["___recordID": "x"])])
            #expect(reserved.serverErrorCode == "BAD_REQUEST")
        }
    }

    @Test(arguments: Engine.available) func queriesInDevelopmentAddTheIndexesTheyNeed(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.modify(
                "_defaultZone",
                [typedOp("create", "a1", "Article", ["title": ("Sync is hard", "STRING"), "order": (1, "INT64")])])
            _ = try await alice.query("Article", filters: [filter("order", "GREATER_THAN", 0)], sorts: [sort("order")])
            _ = try await alice.query("Article", filters: [filter("title", "CONTAINS_ANY_TOKENS", "sync")])
            _ = try await alice.query("Article")
            let article = try #require(
                try await server.server.store.schema(container: Self.container, environment: .development).schema
                    .recordTypes["Article"])
            #expect(article.fields["order"]?.indexes == [.queryable, .sortable])
            #expect(article.fields["title"]?.indexes == [.searchable])
            #expect(article.systemIndexes[.recordName] == [.queryable])
        }
    }

    /// The whole life cycle: develop, export, deploy, then production refuses what the schema
    /// does not have, and a second deploy (done beside the running server) takes effect at once.
    @Test(arguments: Engine.available) func exportDeployAndProductionRejections(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            var alice = try await server.user("alice")
            _ = try await alice.modify(
                "_defaultZone",
                [typedOp("create", "a1", "Article", ["title": ("Sync is hard", "STRING"), "order": (1, "INT64")])],
                scope: "public")
            _ = try await alice.query(
                "Article", filters: [filter("order", "GREATER_THAN", 0)], sorts: [sort("order")], scope: "public")

            // The CLI's view: a second store on the same storage, as another process opens it.
            let cli = try await server.server.configuration.storage.open(logger: Logger(label: "cli"))
            let exported = try await SchemaDeployment.export(container: Self.container, environment: .development, from: cli)
            let lines = exported.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
            #expect(lines.contains("RECORD TYPE Article ("))
            #expect(lines.contains("order INT64 QUERYABLE SORTABLE,"), "\(exported)")
            #expect(lines.contains("title STRING,"))
            #expect(lines.contains(#"GRANT READ TO "_world""#))
            #expect(lines.contains(#""___recordID" REFERENCE,"#))
            #expect(try SchemaFile.parse(exported) == (try await cli.schema(container: Self.container, environment: .development)).schema)

            alice.environment = "production"
            let before = try await alice.modify(
                "_defaultZone", [typedOp("create", "p1", "Article", ["order": (1, "INT64")])], scope: "public")
            #expect(before.serverErrorCode == "BAD_REQUEST")
            #expect(before.reason.contains("record type 'Article' is not in the production schema"), "\(before.reason)")

            let report = try await SchemaDeployment.deploy(nil, container: Self.container, to: cli)
            #expect(report.addedRecordTypes == ["Article"])
            #expect(report.addedIndexes == ["Article.order QUERYABLE", "Article.order SORTABLE"])

            let saved = try await alice.modify(
                "_defaultZone", [typedOp("create", "p1", "Article", ["order": (5, "INT64"), "title": ("Hi", "STRING")])],
                scope: "public")
            #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.text)")
            let unknownField = try await alice.modify(
                "_defaultZone", [typedOp("create", "p2", "Article", ["color": ("red", "STRING")])], scope: "public")
            #expect(unknownField.serverErrorCode == "BAD_REQUEST")
            #expect(unknownField.reason.contains("field 'color' of record type 'Article' is not in the production schema"))
            let changedType = try await alice.modify(
                "_defaultZone", [typedOp("create", "p3", "Article", ["order": ("high", "STRING")])], scope: "public")
            #expect(changedType.serverErrorCode == "BAD_REQUEST")
            #expect(changedType.reason.contains("is INT64 in the production schema"), "\(changedType.reason)")
            let unknownType = try await alice.modify(
                "_defaultZone", [typedOp("create", "p4", "Comment", ["text": ("x", "STRING")])], scope: "public")
            #expect(unknownType.reason.contains("record type 'Comment' is not in the production schema"))

            // Indexes deployed from development work in production; others are refused, naming the field.
            let sorted = try await alice.query(
                "Article", filters: [filter("order", "GREATER_THAN", 0)], sorts: [sort("order")], scope: "public")
            #expect(sorted.recordNames == ["p1"], "\(sorted.text)")
            let unindexed = try await alice.query("Article", filters: [filter("title", "EQUALS", "Hi")], scope: "public")
            #expect(unindexed.serverErrorCode == "BAD_REQUEST")
            #expect(unindexed.reason.contains("field 'title' of record type 'Article' is not marked QUERYABLE"), "\(unindexed.reason)")
            let unsearchable = try await alice.query(
                "Article", filters: [filter("title", "CONTAINS_ALL_TOKENS", "hi")], scope: "public")
            #expect(unsearchable.reason.contains("field 'title' of record type 'Article' is not marked SEARCHABLE"))
            let all = try await alice.query("Article", scope: "public")
            #expect(all.reason.contains("field 'recordName' of record type 'Article' is not marked QUERYABLE"))

            // A new field and index need a deploy; deployed beside the running server, they
            // apply to the very next request (and the index covers existing records).
            var file = try SchemaFile.parse(exported)
            file.recordTypes["Article"]!.fields["title"]!.indexes = [.queryable, .searchable]
            file.recordTypes["Article"]!.fields["color"] = FieldSchema(type: .string)
            let second = try await SchemaDeployment.deploy(file, container: Self.container, to: cli)
            #expect(second.addedFields == ["Article.color"])
            #expect(second.addedIndexes == ["Article.title QUERYABLE", "Article.title SEARCHABLE"])
            let found = try await alice.query("Article", filters: [filter("title", "EQUALS", "Hi")], scope: "public")
            #expect(found.recordNames == ["p1"], "\(found.text)")
            let searched = try await alice.query("Article", filters: [filter("title", "CONTAINS_ALL_TOKENS", "HI")], scope: "public")
            #expect(searched.recordNames == ["p1"], "\(searched.text)")
            let colored = try await alice.modify(
                "_defaultZone", [typedOp("create", "p2", "Article", ["color": ("red", "STRING")])], scope: "public")
            #expect(colored.records.first?["serverErrorCode"] == nil, "\(colored.text)")

            // Deploys are additive.
            var shrunk = file
            shrunk.recordTypes["Article"]!.fields["color"] = nil
            await #expect(throws: CloudKitError.self) {
                _ = try await SchemaDeployment.deploy(shrunk, container: Self.container, to: cli)
            }
            var retyped = file
            retyped.recordTypes["Article"]!.fields["order"] = FieldSchema(type: .string)
            do {
                _ = try await SchemaDeployment.deploy(retyped, container: Self.container, to: cli)
                Issue.record("a deploy changing a field's type succeeded")
            } catch let error as CloudKitError {
                #expect(error.reason.contains("field 'Article.order' is INT64 in production and cannot become STRING"))
            }
            try await cli.shutdown()
        }
    }

    @Test func schemaFilesRoundTripAndBadFilesNameTheLine() throws {
        let text = """
            DEFINE SCHEMA
                CREATE ROLE Moderator;
                // Articles of the public feed.
                RECORD TYPE Article (
                    "___createTime" TIMESTAMP SORTABLE,
                    "___recordID" REFERENCE QUERYABLE,
                    order INT64 QUERYABLE SORTABLE,
                    tags LIST<STRING> QUERYABLE SEARCHABLE,
                    "spot" LOCATION QUERYABLE SORTABLE,
                    GRANT READ, WRITE TO "Moderator",
                    GRANT READ TO "_world"
                );
            """
        let schema = try SchemaFile.parse(text)
        let article = try #require(schema.recordTypes["Article"])
        #expect(schema.roles == ["Moderator"])
        #expect(article.fields["tags"] == FieldSchema(type: .stringList, indexes: [.queryable, .searchable]))
        #expect(article.fields["spot"]?.type == .location)
        #expect(article.systemIndexes == [.createdTimestamp: [.sortable], .recordName: [.queryable]])
        #expect(article.grants == [Grant(.read, to: "Moderator"), Grant(.write, to: "Moderator"), Grant(.read, to: "_world")])
        #expect(try SchemaFile.parse(SchemaFile.text(of: schema)) == schema)

        let bad: [(String, String)] = [
            ("DEFINE SCHEMA RECORD TYPE A ( x WORD );", "line 1: expected a field type"),
            ("DEFINE SCHEMA\nRECORD TYPE A (\n x INT64 SEARCHABLE\n);", "only STRING and STRING_LIST fields can be SEARCHABLE"),
            ("DEFINE SCHEMA\nRECORD TYPE A ( x LIST<INT64> SORTABLE );", "list fields cannot be SORTABLE"),
            ("DEFINE SCHEMA\nRECORD TYPE A ( GRANT READ TO \"Editors\" );", "undeclared role 'Editors'"),
            ("DEFINE SCHEMA\nRECORD TYPE A ( x STRING );\nRECORD TYPE A ( y STRING );", "line 3: record type 'A' is defined twice"),
        ]
        for (text, reason) in bad {
            do {
                _ = try SchemaFile.parse(text)
                Issue.record("parsed: \(text)")
            } catch {
                #expect(error.reason.contains(reason), "\(error.reason) should mention \(reason)")
            }
        }
    }
}
