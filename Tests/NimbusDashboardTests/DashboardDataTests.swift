import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import Foundation
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Records through the dashboard: the same modify path as the API, change tags and all.
@Suite("Dashboard records, queries and schema")
struct DashboardDataTests {
    static let c = DashboardServer.container

    /// Saves `Note/name` through the API as a user; returns its change tag.
    static func saveNote(_ server: DashboardServer, _ name: String, title: String, token: String) async throws -> String {
        let answer = try await server.api(
            "records/modify",
            [
                "operations": [
                    [
                        "operationType": "create",
                        "record": ["recordName": .string(name), "recordType": "Note", "fields": ["title": ["value": .string(title)]]],
                    ]
                ]
            ], webAuthToken: token)
        return try #require(answer["records"]?.array?.first?["recordChangeTag"]?.string, "\(answer)")
    }

    static func lookUp(_ server: DashboardServer, _ name: String, token: String) async throws -> JSON {
        let answer = try await server.api("records/lookup", ["records": [["recordName": .string(name)]]], webAuthToken: token)
        return try #require(answer["records"]?.array?.first)
    }

    @Test("a field holding markup is shown as text", arguments: Engine.available)
    func escaping(engine: Engine) async throws {
        try await DashboardServer.with(engine) { server, browser in
            let token = try await server.userToken("alice")
            _ = try await Self.saveNote(server, "evil", title: "<script>alert('x')</script>", token: token)
            try await browser.signIn()
            let page = try await browser.get("/dashboard/record?c=\(Self.c)&record=evil")
            #expect(page.status == 200)
            #expect(page.body.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"))
            #expect(!page.body.contains("<script>alert"))
            #expect(!page.body.contains("role=\"alert\"") && !page.body.contains("nil<"))
            let list = try await browser.get("/dashboard/records?c=\(Self.c)&zone=_defaultZone")
            #expect(list.body.contains("evil"))
            #expect(!list.body.contains("<script>alert"))
        }
    }

    @Test("an edit with the current change tag is saved and read back through the API", arguments: Engine.available)
    func editSaved(engine: Engine) async throws {
        try await DashboardServer.with(engine) { server, browser in
            let token = try await server.userToken("alice")
            let tag = try await Self.saveNote(server, "n1", title: "first", token: token)
            try await browser.signIn()
            let page = try await browser.get("/dashboard/record?c=\(Self.c)&record=n1")
            let csrf = try #require(Browser.hidden("csrf", in: page.body))
            #expect(Browser.hidden("changeTag", in: page.body) == tag)
            let saved = try await browser.post(
                "/dashboard/record/save",
                [
                    "csrf": csrf, "c": Self.c, "env": "development", "zone": "_defaultZone", "recordName": "n1",
                    "recordType": "Note", "changeTag": tag, "f:title": "edited", "t:title": "STRING", "o:title": "first",
                    "newName": "count", "newType": "INT64", "newValue": "3",
                ])
            #expect(saved.status == 303, "\(saved.body)")
            let record = try await Self.lookUp(server, "n1", token: token)
            #expect(record["fields"]?["title"]?["value"]?.string == "edited")
            #expect(record["fields"]?["count"]?["value"]?.int64 == 3)
            #expect(record["recordChangeTag"]?.string != tag)
        }
    }

    @Test("an edit with a stale change tag is a conflict and overwrites nothing", arguments: Engine.available)
    func staleTagConflict(engine: Engine) async throws {
        try await DashboardServer.with(engine) { server, browser in
            let token = try await server.userToken("alice")
            let stale = try await Self.saveNote(server, "n2", title: "first", token: token)
            try await browser.signIn()
            let page = try await browser.get("/dashboard/record?c=\(Self.c)&record=n2")
            let csrf = try #require(Browser.hidden("csrf", in: page.body))
            // Someone else saves in between.
            let update = try await server.api(
                "records/modify",
                [
                    "operations": [
                        [
                            "operationType": "update",
                            "record": [
                                "recordName": "n2", "recordType": "Note", "recordChangeTag": .string(stale),
                                "fields": ["title": ["value": "theirs"]],
                            ],
                        ]
                    ]
                ], webAuthToken: token)
            #expect(update["records"]?.array?.first?["serverErrorCode"] == nil)
            let saved = try await browser.post(
                "/dashboard/record/save",
                [
                    "csrf": csrf, "c": Self.c, "env": "development", "zone": "_defaultZone", "recordName": "n2",
                    "recordType": "Note", "changeTag": stale, "f:title": "mine", "t:title": "STRING", "o:title": "first",
                ])
            #expect(saved.status == 409)
            #expect(saved.body.contains("Conflict"))
            #expect(saved.body.contains("theirs"))
            let record = try await Self.lookUp(server, "n2", token: token)
            #expect(record["fields"]?["title"]?["value"]?.string == "theirs")

            let deleted = try await browser.post(
                "/dashboard/record/delete",
                ["csrf": csrf, "c": Self.c, "env": "development", "zone": "_defaultZone", "recordName": "n2", "changeTag": stale])
            #expect(deleted.status == 409)
            #expect(try await Self.lookUp(server, "n2", token: token)["serverErrorCode"] == nil)
        }
    }

    @Test("a zone's records come in pages of 50 with a link to the next")
    func paging() async throws {
        try await DashboardServer.with { server, browser in
            let token = try await server.userToken("alice")
            let operations: [JSON] = (0..<60).map { index in
                [
                    "operationType": "create",
                    "record": ["recordName": .string("r\(index)"), "recordType": "Note", "fields": ["title": ["value": "t"]]],
                ]
            }
            _ = try await server.api("records/modify", ["operations": .array(operations)], webAuthToken: token)
            try await browser.signIn()
            let first = try await browser.get("/dashboard/records?c=\(Self.c)&zone=_defaultZone")
            let rows = { (html: String) in html.components(separatedBy: "<tr><td><a href=\"/dashboard/record?").count - 1 }
            #expect(rows(first.body) == 50)
            let marker = "<a href=\"/dashboard/records?"
            let start = try #require(first.body.range(of: marker + "c=", options: .backwards))
            let rest = first.body[start.lowerBound...].dropFirst("<a href=\"".count)
            let next = String(rest[..<rest.firstIndex(of: "\"")!]).replacingOccurrences(of: "&amp;", with: "&")
            #expect(next.contains("page="))
            let second = try await browser.get(next)
            #expect(rows(second.body) == 10)
            #expect(!second.body.contains("rel=\"next\""))
        }
    }

    @Test("the query builder runs records/query and shows the request as curl")
    func query() async throws {
        try await DashboardServer.with { server, browser in
            let token = try await server.userToken("alice")
            _ = try await Self.saveNote(server, "a", title: "apple", token: token)
            _ = try await Self.saveNote(server, "b", title: "banana", token: token)
            try await browser.signIn()
            let page = try await browser.get(
                "/dashboard/query?c=\(Self.c)&env=development&recordType=Note&ff0=title&fc0=BEGINS_WITH&ft0=STRING&fv0=ban&desiredKeys=title")
            #expect(page.status == 200)
            #expect(page.body.contains("Results (1"))
            #expect(page.body.contains("banana"))
            #expect(!page.body.contains("apple"))
            #expect(page.body.contains("records/query?ckAPIToken=$NIMBUS_API_TOKEN"))
            #expect(page.body.contains("BEGINS_WITH"))
        }
    }

    @Test("deploying the development schema follows nimbus schema deploy", arguments: Engine.available)
    func deploy(engine: Engine) async throws {
        try await DashboardServer.with(engine) { server, browser in
            let token = try await server.userToken("alice")
            _ = try await Self.saveNote(server, "a", title: "apple", token: token)
            try await browser.signIn()
            let page = try await browser.get("/dashboard/schema?c=\(Self.c)")
            #expect(page.body.contains("+ record type Note"))
            let csrf = try #require(Browser.hidden("csrf", in: page.body))
            let deployed = try await browser.post("/dashboard/schema/deploy", ["csrf": csrf, "c": Self.c])
            #expect(deployed.status == 200)
            #expect(deployed.body.contains("Deployed"))
            let production = try await server.server.store.schema(container: Self.c, environment: .production)
            #expect(production.schema.recordTypes["Note"]?.fields["title"]?.type == .string)
            #expect(try await server.server.store.auditLog(limit: 5).first?.action == "deploy schema")
        }
    }

    @Test("the development schema is edited additively and only from its current version")
    func editDevelopmentSchema() async throws {
        try await DashboardServer.with { server, browser in
            let token = try await server.userToken("alice")
            _ = try await Self.saveNote(server, "a", title: "apple", token: token)
            try await browser.signIn()
            let page = try await browser.get("/dashboard/schema?c=\(Self.c)")
            let csrf = try #require(Browser.hidden("csrf", in: page.body))
            let version = try #require(Browser.hidden("version", in: page.body))
            let current = try await server.server.store.schema(container: Self.c, environment: .development).schema
            let text = SchemaFile.text(of: current).replacingOccurrences(of: "RECORD TYPE Note (", with: "RECORD TYPE Note (\n        pages INT64,")
            let saved = try await browser.post("/dashboard/schema/development", ["csrf": csrf, "c": Self.c, "version": version, "schema": text])
            #expect(saved.body.contains("Development schema saved"), "\(saved.body)")
            let after = try await server.server.store.schema(container: Self.c, environment: .development)
            #expect(after.schema.recordTypes["Note"]?.fields["pages"]?.type == .int64)

            let stale = try await browser.post("/dashboard/schema/development", ["csrf": csrf, "c": Self.c, "version": version, "schema": text])
            #expect(stale.body.contains("changed since this page was loaded"))
            let broken = try await browser.post(
                "/dashboard/schema/development", ["csrf": csrf, "c": Self.c, "version": String(after.version), "schema": "DEFINE NONSENSE"])
            #expect(broken.body.contains("Not saved"))
            #expect(broken.body.contains("DEFINE NONSENSE"))
        }
    }

    @Test("the live page counts requests by operation and lists recent notifications")
    func live() async throws {
        try await DashboardServer.with { server, browser in
            let token = try await server.userToken("alice")
            let subscribed = try await server.api(
                "subscriptions/modify",
                [
                    "operations": [
                        [
                            "operationType": "create",
                            "subscription": [
                                "subscriptionID": "new-notes", "subscriptionType": "query", "query": ["recordType": "Note"],
                                "firesOn": ["create"], "notificationInfo": ["shouldSendContentAvailable": true],
                            ],
                        ]
                    ]
                ], webAuthToken: token)
            #expect(subscribed["subscriptions"]?.array?.first?["serverErrorCode"] == nil, "\(subscribed)")
            _ = try await Self.saveNote(server, "watched", title: "<b>hi</b>", token: token)
            try await browser.signIn()
            let page = try await browser.get("/dashboard/live")
            #expect(page.status == 200)
            #expect(page.body.contains("data-live=\"total\""))
            #expect(page.body.contains("<td>new-notes</td>"))
            #expect(page.body.contains("<td>watched</td>"))
            #expect(server.server.statistics.snapshot().total > 0)
        }
    }
}

/// Asset fields on a record page: a download link and an image preview, with the API's
/// signed download URL.
@Suite("Dashboard assets")
struct DashboardAssetTests {
    @Test("an asset field shows as a download link and a preview that serve the uploaded bytes")
    func assetLinks() async throws {
        try await DashboardServer.with { server, browser in
            let token = try await server.userToken("alice")
            let upload = try await server.api(
                "assets/upload",
                ["tokens": [["recordName": "photo", "recordType": "Photo", "fieldName": "image"]]], webAuthToken: token)
            let url = try #require(upload["tokens"]?.array?.first?["url"]?.string, "\(upload)")
            let bytes: [UInt8] = Array("not really a PNG".utf8)
            var request = HTTPClientRequest(url: url)
            request.method = .POST
            request.body = .bytes(ByteBuffer(bytes: bytes))
            let posted = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
            let singleFile = try #require(try JSON.parse(Array(try await posted.body.collect(upTo: 1 << 20).readableBytesView))["singleFile"])
            let saved = try await server.api(
                "records/modify",
                [
                    "operations": [
                        [
                            "operationType": "create",
                            "record": [
                                "recordName": "photo", "recordType": "Photo",
                                "fields": ["image": ["type": "ASSETID", "value": singleFile]],
                            ],
                        ]
                    ]
                ], webAuthToken: token)
            #expect(saved["records"]?.array?.first?["serverErrorCode"] == nil, "\(saved)")

            try await browser.signIn()
            let page = try await browser.get("/dashboard/record?c=\(DashboardServer.container)&record=photo")
            #expect(page.body.contains("Download (\(bytes.count) bytes)"))
            let marker = "<img class=\"asset-preview\" src=\""
            let start = try #require(page.body.range(of: marker))
            let rest = page.body[start.upperBound...]
            let href = String(rest[..<rest.firstIndex(of: "\"")!]).replacingOccurrences(of: "&amp;", with: "&")
            #expect(href.hasPrefix(server.server.baseURL + "/assets/1/download/"))
            let download = try await HTTPClient.shared.execute(HTTPClientRequest(url: href), timeout: .seconds(120))
            #expect(download.status == .ok)
            #expect(Array(try await download.body.collect(upTo: 1 << 20).readableBytesView) == bytes)
        }
    }
}
