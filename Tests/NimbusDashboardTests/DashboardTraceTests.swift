import Foundation
import Nimbus
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// The traces page: a change made with the SDK under a trace, found by record name or trace
/// ID, its hops and where it stopped; hostile names and attributes shown as text; searches that
/// can be neither a trace ID nor a record name refused in words.
@Suite("Dashboard traces page")
struct DashboardTraceTests {
    /// The SDK's container as device `device` of a user.
    static func container(_ server: DashboardServer, webToken: String, device: String = "A") -> Container {
        Container(
            identifier: DashboardServer.container, baseURL: URL(string: server.server.baseURL)!,
            credentials: .apiToken(server.apiToken, webAuthToken: webToken), deviceID: device)
    }

    /// Saves a note in the public database under `trace` and waits until the server has
    /// written the commit's hop to the store.
    static func tracedSave(_ server: DashboardServer, _ name: String, trace: RequestTrace, webToken: String) async throws {
        let commits = server.server.traces.spans { $0.name == "commit" && $0.traceID == trace.traceID }
        let database = container(server, webToken: webToken).publicCloudDatabase
        var record = Record(recordType: "Note", recordID: .init(recordName: name))
        record["title"] = "traced"
        try await RequestTrace.$current.withValue(trace) { _ = try await database.save(record) }
        _ = try #require(try await first(commits), "no commit hop for \(name)")
        await server.server.traces.flush()
    }

    @Test("a traced change's hops and verdict, by record name and by trace ID", arguments: Engine.available)
    func tracedChange(engine: Engine) async throws {
        try await DashboardServer.with(engine) { server, browser in
            let token = try await server.userToken("alice")
            let trace = RequestTrace.random()
            try await Self.tracedSave(server, "traced-note", trace: trace, webToken: token)
            let expected = try await server.server.store.traceView(of: trace.traceID)
            try await browser.signIn()

            let page = try await browser.get("/dashboard/traces?q=traced-note")
            #expect(page.status == 200, "\(page.body)")
            #expect(page.body.contains("id=\"verdict\""))
            #expect(page.body.contains("Where it stopped: \(expected.stop.rawValue)</strong>"), "\(page.body)")
            #expect(expected.stop == .committedUnheard, "\(expected.text)")
            #expect(page.body.contains(trace.traceID))
            for hop in ["records/modify", "commit"] { #expect(page.body.contains("<strong>\(hop)</strong>"), "\(hop)") }
            #expect(page.body.contains("<code>device</code>=A"))
            // The verdict comes before the hops.
            let verdict = try #require(page.body.range(of: "id=\"verdict\""))
            let hops = try #require(page.body.range(of: "id=\"hops\""))
            #expect(verdict.lowerBound < hops.lowerBound)
            // The record's latest traces list this one, as a link.
            #expect(page.body.contains("id=\"recent-traces\""))
            #expect(page.body.contains("href=\"/dashboard/traces?q=\(trace.traceID)\""))

            let byID = try await browser.get("/dashboard/traces?q=\(trace.traceID.uppercased())")
            #expect(byID.status == 200)
            #expect(byID.body.contains("Where it stopped: \(expected.stop.rawValue)</strong>"))
            #expect(byID.body.contains("<strong>records/modify</strong>"))
            let byParent = try await browser.get("/dashboard/traces?q=00-\(trace.traceID)-\(String(repeating: "1", count: 16))-01")
            #expect(byParent.body.contains("<code id=\"trace-id\">\(trace.traceID)</code>"))

            // The record page links here, and the navigation too.
            let record = try await browser.get("/dashboard/record?c=\(DashboardServer.container)&record=traced-note")
            #expect(record.body.contains("<a href=\"/dashboard/traces?q=traced-note\" id=\"trace-link\">trace</a>"))
            #expect(record.body.contains("<a href=\"/dashboard/traces\">Traces</a>"))
        }
    }

    @Test("a refused change names its hop and code; a change never sent says so")
    func refusedAndUnsent() async throws {
        try await DashboardServer.with { server, browser in
            let token = try await server.userToken("alice")
            let trace = RequestTrace.random()
            let requests = server.server.traces.spans { $0.traceID == trace.traceID }
            var record = Record(recordType: "Note", recordID: .init(recordName: "refused-note"))
            record["bad.field"] = "dots are reserved"
            let database = Self.container(server, webToken: token).publicCloudDatabase
            await #expect(throws: NimbusError.self) {
                try await RequestTrace.$current.withValue(trace) { _ = try await database.save(record) }
            }
            _ = try #require(try await first(requests))
            await server.server.traces.flush()
            try await browser.signIn()
            let page = try await browser.get("/dashboard/traces?q=\(trace.traceID)")
            #expect(page.body.contains("Where it stopped: rejected</strong>"), "\(page.body)")
            #expect(page.body.contains("<strong class=\"code\">BAD_REQUEST</strong>"))
            #expect(page.body.contains("class=\"verdict error\""))

            let unsent = try await browser.get("/dashboard/traces?q=never-sent")
            #expect(unsent.status == 200)
            #expect(unsent.body.contains("Where it stopped: not sent</strong>"))
            #expect(unsent.body.contains("id=\"no-hops\""))
        }
    }

    @Test("record names of private data are hidden unless the container lets operators read it")
    func privateRecordNamesAreHidden() async throws {
        try await DashboardServer.with { server, browser in
            let token = try await server.userToken("alice")
            let trace = RequestTrace.random()
            let commits = server.server.traces.spans { $0.name == "commit" && $0.traceID == trace.traceID }
            let database = Self.container(server, webToken: token).privateCloudDatabase
            try await RequestTrace.$current.withValue(trace) {
                _ = try await database.save(Record(recordType: "Diary", recordID: .init(recordName: "secret-entry")))
            }
            _ = try #require(try await first(commits))
            await server.server.traces.flush()
            try await browser.signIn()

            let hidden = try await browser.get("/dashboard/traces?q=\(trace.traceID)")
            #expect(hidden.status == 200)
            #expect(hidden.body.contains("<strong>records/modify</strong>"), "the hops stay")
            #expect(!hidden.body.contains("secret-entry"), "\(hidden.body)")
            // Searching by the private record's name finds nothing: not even that a trace exists.
            let byName = try await browser.get("/dashboard/traces?q=secret-entry")
            #expect(byName.status == 200)
            #expect(!byName.body.contains(trace.traceID), "\(byName.body)")
            #expect(!byName.body.contains("<strong>records/modify</strong>"))

            try await server.server.store.setOperatorsMayReadPrivateData(true, container: DashboardServer.container)
            let shown = try await browser.get("/dashboard/traces?q=\(trace.traceID)")
            #expect(shown.body.contains("secret-entry"))
            let shownByName = try await browser.get("/dashboard/traces?q=secret-entry")
            #expect(shownByName.body.contains(trace.traceID))
        }
    }

    @Test("hostile record names, messages and attributes are shown as text")
    func escaping() async throws {
        try await DashboardServer.with { server, browser in
            let token = try await server.userToken("mallory")
            let hostile = "<img src=x onerror=alert(1)>"
            let trace = RequestTrace.random()
            let reported = server.server.traces.spans { $0.name == "app.<b>step</b>" }
            let database = Self.container(server, webToken: token).publicCloudDatabase
            try await RequestTrace.$current.withValue(trace) {
                let accepted = try await database.reportTraceSpans([
                    TraceSpanReport(
                        trace: trace.child(), name: "app.<b>step</b>", start: Date(), end: Date(), status: .error,
                        errorCode: "<i>CODE</i>", message: "<script>alert(2)</script>",
                        attributes: ["<u>key</u>": "\"><script>alert(3)</script>"], recordNames: [hostile])
                ])
                #expect(accepted == 1)
            }
            _ = try #require(try await first(reported))
            await server.server.traces.flush()
            try await browser.signIn()
            let page = try await browser.get("/dashboard/traces?q=" + DashboardAppQuery.encoded(hostile))
            #expect(page.status == 200)
            #expect(page.body.contains("&lt;img src=x onerror=alert(1)&gt;"), "\(page.body)")
            #expect(page.body.contains("&lt;script&gt;alert(2)&lt;/script&gt;"))
            #expect(page.body.contains("&lt;u&gt;key&lt;/u&gt;"))
            #expect(page.body.contains("&quot;&gt;&lt;script&gt;alert(3)&lt;/script&gt;"))
            #expect(page.body.contains("app.&lt;b&gt;step&lt;/b&gt;"))
            #expect(page.body.contains("&lt;i&gt;CODE&lt;/i&gt;"))
            for raw in ["<img src=x", "<script>alert", "<u>key", "<b>step", "<i>CODE"] {
                #expect(!page.body.contains(raw), "\(raw) unescaped")
            }
        }
    }

    @Test("the traces page needs an operator")
    func signInRequired() async throws {
        try await DashboardServer.with { _, browser in
            let page = try await browser.get("/dashboard/traces?q=anything")
            #expect(page.status == 303)
            #expect(page.location?.hasPrefix("/dashboard/signin?next=") == true, "\(page.location ?? "")")
            #expect(!page.body.contains("Where it stopped"))
        }
    }

    @Test("a search that is neither a trace ID nor a record name is refused in words")
    func malformedQuery() async throws {
        try await DashboardServer.with { _, browser in
            try await browser.signIn()
            let long = try await browser.get("/dashboard/traces?q=" + String(repeating: "a", count: 300))
            #expect(long.status == 400)
            #expect(long.body.contains("id=\"query-error\""))
            #expect(long.body.contains("The search is 300 bytes long"))
            let control = try await browser.get("/dashboard/traces?q=note%00%07")
            #expect(control.status == 400)
            #expect(control.body.contains("control characters"))
            let garbled = try await browser.get("/dashboard/traces?q=%ZZ%E2%28")
            #expect(garbled.status == 200 || garbled.status == 400, "\(garbled.status)")
            #expect(garbled.body.contains("id=\"trace-search\""))
            let empty = try await browser.get("/dashboard/traces")
            #expect(empty.status == 200)
            #expect(empty.body.contains("id=\"trace-search\"") && !empty.body.contains("id=\"verdict\""))
        }
    }
}

/// Query values percent-encoded as the dashboard's links encode them.
enum DashboardAppQuery {
    static func encoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}
