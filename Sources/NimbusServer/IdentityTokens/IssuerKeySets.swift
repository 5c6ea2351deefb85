import Foundation
import JWTKit
import NimbusProtocol
import NimbusStore

/// The signing keys of identity issuers, fetched from their JWKS and cached.
///
/// Keys are kept for ``maxAge``; a token signed with a key not in the cached set (the issuer
/// rotated its keys) fetches the set again at once, and such refreshes happen at most once per
/// ``minRefreshInterval`` per issuer, so forged `kid`s cannot make the server hammer an issuer. Concurrent requests
/// share one fetch. When an issuer cannot be reached, a stale set that has the key still
/// verifies.
actor IssuerKeySets {
    struct KeySet {
        var keys: JWTKeyCollection
        var kids: Set<String>
        var fetchedAt: Int64
        /// When a token's unknown `kid` last made the server fetch the set again.
        var unknownKidRefreshAt: Int64?
    }

    private let fetcher: any KeySetFetching
    private let clock: WallClock
    let maxAge: Int64
    let minRefreshInterval: Int64
    private var sets: [String: KeySet] = [:]
    private var fetches: [String: Task<KeySet, any Error>] = [:]

    init(fetcher: any KeySetFetching, clock: WallClock, maxAge: Duration = .seconds(3600), minRefreshInterval: Duration = .seconds(60)) {
        self.fetcher = fetcher
        self.clock = clock
        self.maxAge = maxAge.milliseconds
        self.minRefreshInterval = minRefreshInterval.milliseconds
    }

    /// Keys of `issuer` that include `kid`.
    func keys(of issuer: IdentityIssuer, kid: String) async throws(CloudKitError) -> JWTKeyCollection {
        let now = clock.nowMillis()
        let cached = sets[issuer.issuer]
        if let cached, cached.kids.contains(kid), now - cached.fetchedAt < maxAge { return cached.keys }
        let forUnknownKid = cached.map { !$0.kids.contains(kid) } ?? false
        if forUnknownKid, let last = cached?.unknownKidRefreshAt, now - last < minRefreshInterval {
            throw Self.unknownKey(kid, issuer)
        }
        let fresh: KeySet
        do {
            fresh = try await fetch(issuer, forUnknownKid: forUnknownKid)
        } catch {
            if let cached, cached.kids.contains(kid) { return cached.keys }
            throw CloudKitError(
                .tryAgainLater, "the keys of \(issuer.issuer) could not be fetched (\(error)); try again later", retryAfter: 30)
        }
        guard fresh.kids.contains(kid) else { throw Self.unknownKey(kid, issuer) }
        return fresh.keys
    }

    private func fetch(_ issuer: IdentityIssuer, forUnknownKid: Bool) async throws -> KeySet {
        if let running = fetches[issuer.issuer] { return try await running.value }
        let fetcher = self.fetcher
        let now = clock.nowMillis()
        let task = Task { try await Self.load(issuer, fetcher: fetcher, at: now) }
        fetches[issuer.issuer] = task
        defer { fetches[issuer.issuer] = nil }
        var set = try await task.value
        set.unknownKidRefreshAt = forUnknownKid ? now : sets[issuer.issuer]?.unknownKidRefreshAt
        sets[issuer.issuer] = set
        return set
    }

    private static func load(_ issuer: IdentityIssuer, fetcher: any KeySetFetching, at now: Int64) async throws -> KeySet {
        let decoder = JSONDecoder()
        let jwksURL: URL
        if let configured = issuer.jwksURL {
            guard let url = URL(string: configured) else { throw KeySetFetchError("'\(configured)' is not a URL") }
            jwksURL = url
        } else {
            guard let discovery = URL(string: issuer.issuer.trimmingTrailingSlash + "/.well-known/openid-configuration") else {
                throw KeySetFetchError("'\(issuer.issuer)' is not a URL")
            }
            let configuration = try decoder.decode(OpenIDConfiguration.self, from: Data(try await fetcher.document(at: discovery)))
            guard let url = URL(string: configuration.jwks_uri) else {
                throw KeySetFetchError("the OpenID configuration's jwks_uri is not a URL")
            }
            jwksURL = url
        }
        let jwks = try decoder.decode(JWKS.self, from: Data(try await fetcher.document(at: jwksURL)))
        let keys = JWTKeyCollection()
        var kids = Set<String>()
        for jwk in jwks.keys {
            // Keys of kinds JWTKit cannot use (or without a kid) are left out, not fatal.
            guard let kid = jwk.keyIdentifier, (try? await keys.add(jwk: jwk)) != nil else { continue }
            kids.insert(kid.string)
        }
        return KeySet(keys: keys, kids: kids, fetchedAt: now)
    }

    private static func unknownKey(_ kid: String, _ issuer: IdentityIssuer) -> CloudKitError {
        CloudKitError(
            .authenticationFailed, "the ID token is signed with key '\(kid)', which \(issuer.issuer) does not publish; sign in again")
    }

    /// The one member of an OpenID configuration the server reads.
    private struct OpenIDConfiguration: Decodable {
        var jwks_uri: String
    }
}

extension String {
    fileprivate var trimmingTrailingSlash: String { hasSuffix("/") ? String(dropLast()) : self }
}
