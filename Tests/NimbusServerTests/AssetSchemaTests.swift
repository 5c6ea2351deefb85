import Foundation
import Logging
import NimbusEngines
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// ASSET fields in the schema: created by saves in development, exported and deployed,
/// checked in production, never indexed.
@Suite("Asset schema")
struct AssetSchemaTests {
    @Test(arguments: Engine.available) func assetFieldsJoinDeployAndAreCheckedInProduction(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            var alice = try await server.user("alice")
            let image = try await alice.uploadAsset(testBytes(100), record: "d1", field: "image")
            let page = try await alice.uploadAsset(testBytes(200), record: "d1", field: "pages")
            let saved = try await alice.modify(
                "_defaultZone",
                [assetOp("create", "d1", ["image": (image, "ASSETID"), "pages": ([page], "ASSETID_LIST"), "title": ("t", "STRING")])])
            #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.text)")

            let cli = try await server.server.configuration.storage.open(logger: Logger(label: "cli"))
            let development = try await cli.schema(container: TestServer.container, environment: .development).schema
            #expect(development.recordTypes["Photo"]?.fields["image"] == FieldSchema(type: .asset))
            #expect(development.recordTypes["Photo"]?.fields["pages"] == FieldSchema(type: .assetList))
            let exported = try await SchemaDeployment.export(container: TestServer.container, environment: .development, from: cli)
            let lines = exported.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
            #expect(lines.contains("image ASSET,"), "\(exported)")
            #expect(lines.contains("pages LIST<ASSET>,"), "\(exported)")
            #expect(try SchemaFile.parse(exported) == development)
            _ = try await SchemaDeployment.deploy(nil, container: TestServer.container, to: cli)
            try await cli.shutdown()

            alice.environment = "production"
            let file = try await alice.uploadAsset(testBytes(300), record: "p1", field: "image")
            let inProduction = try await alice.modify("_defaultZone", [assetOp("create", "p1", ["image": (file, "ASSETID")])])
            #expect(inProduction.records.first?["serverErrorCode"] == nil, "\(inProduction.text)")
            let wrongField = try await alice.uploadAsset(testBytes(300), record: "p2", field: "title")
            let refused = try await alice.modify("_defaultZone", [assetOp("create", "p2", ["title": (wrongField, "ASSETID")])])
            #expect(refused.serverErrorCode == "BAD_REQUEST", "\(refused.text)")
            #expect(refused.reason.contains("is STRING in the production schema"), "\(refused.reason)")
        }
    }

    @Test func assetFieldsTakeNoIndex() {
        #expect(throws: CloudKitError.self) {
            _ = try SchemaFile.parse("DEFINE SCHEMA\n RECORD TYPE Photo (\n image ASSET QUERYABLE\n );")
        }
        #expect(throws: Never.self) {
            _ = try SchemaFile.parse("DEFINE SCHEMA\n RECORD TYPE Photo (\n image ASSET,\n pages LIST<ASSET>\n );")
        }
    }
}
