import HTTPTypes
import NimbusServer
import Testing

/// The pure rules of ``OriginPolicy``: which host and scheme absolute URLs get, whom the
/// server believes, and the operator's settings it accepts.
@Suite("Security: origin policy")
struct OriginPolicyTests {
    static let local = LocalEndpoint(ip: "10.0.0.5", port: 8080)

    static func arrival(_ authority: String?, peer: String = "203.0.113.9", _ headers: [(String, String)] = [])
        -> RequestArrival
    {
        var fields = HTTPFields()
        for (name, value) in headers { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return RequestArrival(authority: authority, headers: fields, peer: peer, local: local)
    }

    @Test func publicURLsAreASchemeAHostAndAPort() throws {
        #expect(try PublicURL("https://Sync.Example.com/").origin == "https://sync.example.com")
        #expect(try PublicURL("https://sync.example.com:443").origin == "https://sync.example.com")
        #expect(try PublicURL("http://sync.example.com:8080").origin == "http://sync.example.com:8080")
        #expect(try PublicURL("http://[::1]:8080").origin == "http://[::1]:8080")
        for bad in ["sync.example.com", "ftp://sync.example.com", "https://user@sync.example.com", "https://sync.example.com/nimbus",
                    "https://sync.example.com?x=1", "https://sync.example.com#f", "https://", "https://sync.example.com:0",
                    "https://exa mple.com", "javascript:alert(1)"] {
            #expect(throws: OriginSettingError.self, "\(bad)") { try PublicURL(bad) }
        }
        let url = try PublicURL("https://sync.example.com")
        #expect(url.names(authority: "SYNC.example.com"))
        #expect(url.names(authority: "sync.example.com:443"))
        #expect(!url.names(authority: "sync.example.com:8443"))
        #expect(!url.names(authority: "sync.example.com.evil.example"))
    }

    @Test func addressRangesMatchTheirNetworkOnly() throws {
        let ten = try AddressRange("10.0.0.0/8")
        #expect(ten.contains("10.255.1.2"))
        #expect(ten.contains("::ffff:10.1.2.3"))
        #expect(!ten.contains("11.0.0.1"))
        #expect(!ten.contains("evil.example"))
        let one = try AddressRange("192.0.2.7")
        #expect(one.contains("192.0.2.7") && !one.contains("192.0.2.8"))
        let v6 = try AddressRange("fd00::/8")
        #expect(v6.contains("fd12:3456::1") && !v6.contains("fe80::1") && !v6.contains("10.0.0.1"))
        #expect(try AddressRange("0.0.0.0/0").contains("198.51.100.1"))
        for bad in ["", "10.0.0.0/33", "10.0.0.0/-1", "fd00::/129", "10.0.0/8", "example.com", "10.0.0.0/8/8", "10.0.0.0/ 8"] {
            #expect(throws: OriginSettingError.self, "\(bad)") { try AddressRange(bad) }
        }
    }

    @Test func withoutSettingsAnswersFollowTheHostAndMailTheSocket() {
        let policy = OriginPolicy(OriginSettings())
        let poisoned = Self.arrival(
            "client.example:8080",
            [("X-Forwarded-Host", "evil.example"), ("X-Forwarded-Proto", "https"), ("Forwarded", "host=evil.example")])
        #expect(policy.responseOrigin(poisoned) == "http://client.example:8080")
        #expect(policy.mailOrigin(poisoned) == "http://10.0.0.5:8080")
        #expect(policy.misdirection(poisoned) == nil)
        #expect(!policy.isSecure(poisoned))
        // A Host that is more than a host is not used.
        #expect(policy.responseOrigin(Self.arrival("evil.example/path@x")) == "http://10.0.0.5:8080")
        #expect(policy.responseOrigin(Self.arrival(nil)) == "http://10.0.0.5:8080")
    }

    @Test func onlyATrustedPeersForwardingHeadersCountAndTheirLastElement() throws {
        let policy = OriginPolicy(OriginSettings(trustedProxies: [try AddressRange("10.0.0.0/8")]))
        let headers = [("X-Forwarded-Host", "evil.example, sync.example.com"), ("X-Forwarded-Proto", "http, https")]
        #expect(policy.responseOrigin(Self.arrival("backend:8080", peer: "10.1.1.1", headers)) == "https://sync.example.com")
        #expect(policy.responseOrigin(Self.arrival("backend:8080", peer: "203.0.113.9", headers)) == "http://backend:8080")
        let forwarded = [("Forwarded", "host=evil.example, for=10.1.1.1;host=\"sync.example.com\";proto=HTTPS"),
                         ("X-Forwarded-Host", "ignored.example")]
        #expect(policy.responseOrigin(Self.arrival("backend", peer: "10.1.1.1", forwarded)) == "https://sync.example.com")
        // Malformed values fall back to the Host.
        let malformed = [("X-Forwarded-Host", "sync.example.com/evil"), ("X-Forwarded-Proto", "javascript")]
        #expect(policy.responseOrigin(Self.arrival("backend", peer: "10.1.1.1", malformed)) == "http://backend")
        #expect(policy.mailOrigin(Self.arrival("backend", peer: "10.1.1.1", headers)) == "http://10.0.0.5:8080")
    }

    @Test func aPublicURLWinsAndOtherHostsAreMisdirected() throws {
        let policy = OriginPolicy(
            OriginSettings(publicURL: try PublicURL("https://sync.example.com"), trustedProxies: [try AddressRange("10.0.0.0/8")]))
        #expect(policy.responseOrigin(Self.arrival("evil.example")) == "https://sync.example.com")
        #expect(policy.mailOrigin(Self.arrival("evil.example")) == "https://sync.example.com")
        #expect(policy.isSecure(Self.arrival("sync.example.com")))
        #expect(policy.misdirection(Self.arrival("sync.example.com")) == nil)
        #expect(policy.misdirection(Self.arrival("10.0.0.5:8080")) == nil, "the socket's own address")
        #expect(policy.misdirection(Self.arrival("evil.example")) != nil)
        #expect(policy.misdirection(Self.arrival(nil)) != nil)
        #expect(policy.misdirection(Self.arrival("localhost:8080")) != nil, "not on loopback")
        // Behind a trusted proxy the host the client named is the forwarded one.
        #expect(policy.misdirection(Self.arrival("10.0.0.5:8080", peer: "10.9.9.9", [("X-Forwarded-Host", "evil.example")])) != nil)
        #expect(policy.misdirection(Self.arrival("backend", peer: "10.9.9.9", [("X-Forwarded-Host", "sync.example.com")])) == nil)
        // An untrusted peer's forwarding headers change nothing.
        #expect(policy.misdirection(Self.arrival("sync.example.com", [("X-Forwarded-Host", "evil.example")])) == nil)
    }

    @Test func loopbackEndpointsAnswerToLocalhostNames() {
        let loopback = LocalEndpoint(ip: "127.0.0.1", port: 9000)
        #expect(loopback.authorities == ["127.0.0.1:9000", "localhost:9000", "[::1]:9000"])
        #expect(LocalEndpoint(ip: "::1", port: 9000).authority == "[::1]:9000")
        #expect(LocalEndpoint(ip: "10.0.0.5", port: 9000).authorities == ["10.0.0.5:9000"])
    }
}
