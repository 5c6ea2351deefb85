import Foundation
import NimbusProtocol
import NimbusStore
import Testing

@testable import NimbusServer

/// ID tokens of a local issuer (keys and tokens made by the test, JWKS through the fetch
/// seam): what is accepted and every way a token is refused.
@Suite("Identity token verification")
struct IdentityTokenVerifierTests {
    let issuer = LocalIssuer()
    let clock = ManualWallClock(millis: Int64(Date().timeIntervalSince1970 * 1000))

    var verifier: IdentityTokenVerifier { IdentityTokenVerifier(fetcher: issuer, clock: clock.wallClock) }
    var now: Date { clock.wallClock.now() }

    func refusal(
        _ token: String, issuers: [IdentityIssuer]? = nil, nonce: String? = nil, with verifier: IdentityTokenVerifier
    ) async -> CloudKitError? {
        do {
            _ = try await verifier.verify(token, issuers: issuers ?? [issuer.config()], nonce: nonce)
            return nil
        } catch {
            return error
        }
    }

    @Test func aValidTokenNamesItsIssuerSubjectAndEmail() async throws {
        let verifier = self.verifier
        let token = try await issuer.token(subject: "abc", now: now, nonce: "n-1")
        let identity = try await verifier.verify(token, issuers: [issuer.config()], nonce: "n-1")
        #expect(identity.issuer == issuer.issuer)
        #expect(identity.subject == "abc")
        #expect(identity.email == "person@example.com" && identity.emailVerified)
        #expect(identity.tokenID.count == 64, "the token's hash when it has no jti")
        #expect(identity.expiresAt > clock.wallClock.nowMillis())
        // The JWKS was found through the OpenID configuration, fetched once and cached.
        _ = try await verifier.verify(try await issuer.token(now: now), issuers: [issuer.config()], nonce: nil)
        #expect(issuer.fetches == 1)
    }

    @Test func everyBadTokenIsRefusedWithAuthenticationFailedAndAReason() async throws {
        let verifier = self.verifier
        issuer.forge("k1-forged")
        let cases: [(String, String)] = [
            (try await issuer.token(now: now.addingTimeInterval(-3600)), "expired"),
            (try await issuer.token(audience: "com.other.app", now: now), "not for a client this container accepts"),
            (try await issuer.token(now: now) { $0.iss = "https://evil.example" }, "does not accept ID tokens of"),
            (try await issuer.token(now: now.addingTimeInterval(600)), "issued in the future"),
            (try await issuer.token(kid: "k1-forged", now: now), "does not publish"),
            (try await issuer.token(now: now, nonce: "n-1"), "carries a nonce"),
            ("not.a.jwt", "not a JWT"),
            (String(repeating: "a", count: 20_000), "longer than 16 KiB"),
        ]
        for (token, fragment) in cases {
            let error = await refusal(token, with: verifier)
            #expect(error?.code == .authenticationFailed, "\(fragment)")
            #expect(error?.reason.contains(fragment) == true, "\(error?.reason ?? "accepted") — expected \(fragment)")
        }
        let wrongNonce = await refusal(try await issuer.token(now: now, nonce: "n-1"), nonce: "n-2", with: verifier)
        #expect(wrongNonce?.reason.contains("nonce is not the one sent") == true)
        let missingNonce = await refusal(try await issuer.token(now: now), nonce: "n-2", with: verifier)
        #expect(missingNonce?.code == .authenticationFailed)
    }

    @Test func aTamperedSignatureOrAnUnsignedTokenIsRefused() async throws {
        let verifier = self.verifier
        let token = try await issuer.token(now: now)
        var parts = token.split(separator: ".").map(String.init)
        // Another subject in the payload, the signature kept.
        let other = try await issuer.token(subject: "someone-else", now: now).split(separator: ".").map(String.init)
        parts[1] = other[1]
        let swapped = await refusal(parts.joined(separator: "."), with: verifier)
        #expect(swapped?.reason.contains("signature does not verify") == true, "\(swapped?.reason ?? "accepted")")
        // alg "none" with no signature.
        let header = Data(#"{"alg":"none","kid":"k1"}"#.utf8).base64EncodedString()
            .replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        let unsigned = await refusal(header + "." + parts[1] + ".", with: verifier)
        #expect(unsigned?.code == .authenticationFailed, "\(unsigned?.reason ?? "accepted")")
    }

    @Test func rotatedKeysAreFetchedAgainButAtMostOncePerInterval() async throws {
        let verifier = self.verifier
        _ = try await verifier.verify(try await issuer.token(now: now), issuers: [issuer.config()], nonce: nil)
        issuer.rotate(to: "k2", unpublishing: ["k1"])
        let rotated = try await issuer.token(kid: "k2", now: now)
        #expect(try await verifier.verify(rotated, issuers: [issuer.config()], nonce: nil).subject == "user-1")
        #expect(issuer.fetches == 2)
        // Unknown kids within the interval do not reach the issuer.
        issuer.forge("k3")
        for _ in 0..<5 {
            let error = await refusal(try await issuer.token(kid: "k3", now: now), with: verifier)
            #expect(error?.code == .authenticationFailed)
        }
        #expect(issuer.fetches == 2)
        clock.advance(by: .seconds(61))
        _ = await refusal(try await issuer.token(kid: "k3", now: clock.wallClock.now()), with: verifier)
        #expect(issuer.fetches == 3)
    }

    @Test func anUnreachableIssuerIsTryAgainLaterUnlessCachedKeysStillVerify() async throws {
        let verifier = self.verifier
        issuer.setDown(true)
        let first = await refusal(try await issuer.token(now: now), with: verifier)
        #expect(first?.code == .tryAgainLater)
        issuer.setDown(false)
        _ = try await verifier.verify(try await issuer.token(now: now), issuers: [issuer.config()], nonce: nil)
        issuer.setDown(true)
        clock.advance(by: .seconds(2 * 3600))
        let later = clock.wallClock.now()
        #expect(try await verifier.verify(try await issuer.token(now: later), issuers: [issuer.config()], nonce: nil).subject == "user-1")
    }
}
