import Foundation
import NIOHTTP1
import NimbusProtocol
import NimbusTestSupport
import Testing

/// The headers a client (or a proxy it fakes) can send to choose the host and scheme of the
/// URLs a server writes, each with a host of the attacker's.
enum Poisoning: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case host = "Host"
    case forwardedHost = "X-Forwarded-Host"
    case forwardedProto = "X-Forwarded-Proto"
    case forwarded = "Forwarded"

    static let attackerHost = "evil.example"

    var headers: [(String, String)] {
        switch self {
        case .host: [("Host", Self.attackerHost)]
        case .forwardedHost: [("X-Forwarded-Host", Self.attackerHost)]
        case .forwardedProto: [("X-Forwarded-Proto", "https")]
        case .forwarded: [("Forwarded", "for=192.0.2.1;host=\(Self.attackerHost);proto=https")]
        }
    }

    var testDescription: String { rawValue }
}

/// Every absolute URL a server hands out in answers, collected for one client with extra headers.
enum OriginProbe {
    /// Saves what the probe reads back: a record with an asset, and a shared album.
    static func prepare(_ alice: TestClient) async throws {
        // The upload URL may start with a public URL no DNS knows: send it to the server itself.
        let (reply, url) = try await alice.requestUpload(record: "photo", field: "image")
        let path = try #require(url.flatMap { URLComponents(string: $0) }, "\(reply.text)")
        let posted = try await alice.transfer(alice.baseURL + path.percentEncodedPath + "?" + (path.percentEncodedQuery ?? ""), bytes: testBytes(64))
        let file = try #require(posted.json["singleFile"], "\(posted.status)")
        let saved = try await alice.modify("_defaultZone", [assetOp("create", "photo", ["image": (file, "ASSETID")])])
        #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.text)")
        try await SharingTests.album(alice)
        _ = try await SharingTests.shareAlbum(alice)
    }

    /// The URLs of the answers to `alice` (prepared) and an anonymous client, each request
    /// sent with `headers`; the status of a refused request instead of its URL.
    static func urls(_ alice: TestClient, anonymous: TestClient, headers: [(String, String)]) async throws
        -> [String: String]
    {
        var found: [String: String] = [:]
        func note(_ name: String, _ reply: TestClient.Reply, _ url: String?) {
            // 421 is CloudKit's AUTHENTICATION_REQUIRED, which carries the redirectURL.
            let answered = reply.status == 200 || (reply.status == 421 && reply.serverErrorCode == "AUTHENTICATION_REQUIRED")
            found[name] = answered ? (url ?? "none: \(reply.text)") : "status \(reply.status) \(reply.serverErrorCode ?? "")"
        }
        let tokensBody: JSON = ["apnsEnvironment": "development"]
        let tokens = try await alice.send(
            "\(alice.baseURL)/database/1/\(alice.container)/development/tokens/create?ckAPIToken=\(alice.apiToken ?? "")"
                + "&ckWebAuthToken=\(alice.webAuthToken ?? "")",
            method: .POST, body: tokensBody.serializedBytes(), headers: headers)
        note("webcourierURL", tokens, tokens["webcourierURL"]?.string)
        let upload = try await alice.post(
            "assets/upload",
            ["zoneID": ["zoneName": "_defaultZone"],
             "tokens": [["recordName": "photo-2", "recordType": "Photo", "fieldName": "image"]]],
            headers: headers)
        note("upload url", upload, upload["tokens"]?.array?.first?["url"]?.string)
        let photo = try await alice.post(
            "records/lookup", ["zoneID": ["zoneName": "_defaultZone"], "records": [["recordName": "photo"]]], headers: headers)
        note("downloadURL", photo, photo.records.first?["fields"]?["image"]?["value"]?["downloadURL"]?.string)
        let share = try await alice.post(
            "records/lookup", ["zoneID": ["zoneName": "Albums"], "records": [["recordName": "album-share"]]], headers: headers)
        note("share url", share, share.records.first?["url"]?.string)
        let signIn = try await anonymous.post("records/query", ["query": ["recordType": "Note"]], headers: headers)
        note("redirectURL", signIn, signIn["redirectURL"]?.string)
        return found
    }
}
