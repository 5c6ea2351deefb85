import Logging
import AsyncHTTPClient
import NIOCore
import NimbusProtocol
import NimbusServer
import NimbusTestSupport
import Testing

/// No tokens, passwords or record contents in the server's logs, at any level.
@Suite("Log redaction")
struct LogRedactionTests {
    @Test(arguments: Engine.available) func aServerAtTraceLogsNoSecretsNorRecordContents(engine: Engine) async throws {
        let recorder = LineRecorder()
        let fieldSecret = "field-value-7c1e-do-not-log"
        let password = "password-9b2d-do-not-log"
        let metricsToken = "metrics-token-3f8a-do-not-log"
        var secrets: [String] = [fieldSecret, password, metricsToken]
        var requestIDs: [String] = []
        try await TestServer.with(engine, configure: { $0.metrics.bearerToken = metricsToken }, logger: recorder.logger()) { server in
            let alice = try await server.user("alice", device: "phone")
            secrets += [server.apiToken, try #require(alice.webAuthToken)]
            _ = try await alice.createZone("Notes")
            let saved = try await alice.modify("Notes", [op("create", "n1", "Note", fields: ["body": .string(fieldSecret)])])
            #expect(saved.status == 200)
            _ = try await alice.lookup("n1", zone: "Notes")
            _ = try await alice.changes("Notes")
            // Failures: a bad body quoting the secret, a wrong token, a password sign-in.
            let bad = try await alice.post(
                "records/modify", ["zoneID": ["zoneName": "Notes"], "operations": [["operationType": .string(fieldSecret)]]])
            #expect(bad.status == 400)
            var stranger = alice
            stranger.webAuthToken = "not-a-token-" + password
            #expect(try await stranger.get("users/current").status >= 400)
            let signIn = try await alice.post(
                "accounts/signin", ["email": "alice@example.com", "password": .string(password)], scope: "public")
            #expect(signIn.status >= 400)
            let scrape = try await MetricsScrape.of(server.server.baseURL, authorization: "Bearer \(metricsToken)")
            #expect(scrape.status == 200)
            let device = try await PushTestDevice.connect(alice, deviceID: "tablet")
            await device.disconnect()
            requestIDs = [saved, bad].compactMap { $0["uuid"]?.string }
        }
        let lines = recorder.recorded
        #expect(lines.contains { $0.contains("request_id=") }, "trace logging wrote request lines")
        for id in requestIDs { #expect(lines.contains { $0.contains("request_id=\(id)") }) }
        for secret in secrets {
            let leaking = lines.filter { $0.contains(secret) }
            #expect(leaking.isEmpty, "\(secret) was logged: \(leaking)")
        }
    }

    @Test func redactionMasksTokenValuesInTextAndSecretKeys() {
        #expect(LogRedaction.redact("GET /x?ckAPIToken=abc&ckWebAuthToken=d%2Be&b=1") == "GET /x?ckAPIToken=[redacted]&ckWebAuthToken=[redacted]&b=1")
        #expect(LogRedaction.redact("Authorization: Bearer tok123") == "Authorization: Bearer [redacted]")
        #expect(LogRedaction.redact("PASSWORD=hunter2 next") == "PASSWORD=[redacted] next")
        #expect(LogRedaction.redact("nothing to hide") == "nothing to hide")
        #expect(LogRedaction.redact("ckAPIToken=") == "ckAPIToken=")
        #expect(LogRedaction.isSecretKey("apiToken") && LogRedaction.isSecretKey("X-Password") && !LogRedaction.isSecretKey("path"))
        let line = ServerLogHandlerTests.render(.text, "hi", ["webAuthToken": "abc", "nested": .dictionary(["password": "p"])])
        #expect(!line.contains("abc") && !line.contains("=p") && line.contains("[redacted]"), "\(line)")
    }
}
