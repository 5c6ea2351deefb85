import ArgumentParser
import NimbusProtocol
import NimbusStore

extension ContainerCommand {
    /// `nimbus container issuer add|list|remove`: the identity providers whose ID tokens a
    /// container exchanges for sessions (`accounts/signin/idtoken`).
    struct Issuer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The identity providers (OpenID Connect issuers) whose ID tokens sign users in.",
            subcommands: [Add.self, List.self, Remove.self])

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Accept ID tokens of an issuer: --apple, --google, or --issuer URL (keys found by OpenID discovery).")
            @Argument(help: "The container identifier.") var container: String
            @Flag(name: .long, help: "Sign in with Apple (https://appleid.apple.com).") var apple = false
            @Flag(name: .long, help: "Google (https://accounts.google.com).") var google = false
            @Option(name: .long, help: "The issuer's `iss`, an https URL.") var issuer: String?
            @Option(name: .long, help: "A client ID tokens must be issued to (`aud`): bundle ID, Services ID, OAuth client ID. Repeatable.")
            var audience: [String] = []
            @Option(name: .long, help: "The JWKS URL, when the issuer has no OpenID discovery document.") var jwksURL: String?
            @OptionGroup var data: DataOptions
            @OptionGroup var output: OutputOptions

            func run() async throws {
                let configured = try Self.issuer(apple: apple, google: google, issuer: issuer, audiences: audience, jwksURL: jwksURL)
                try await withStore(data) { try await $0.addIdentityIssuer(configured, container: container) }
                emit(output, json: Issuer.json(configured), text: "\(container) accepts ID tokens of \(configured.issuer) for "
                    + configured.audiences.joined(separator: ", "))
            }

            static func issuer(
                apple: Bool, google: Bool, issuer: String?, audiences: [String], jwksURL: String?
            ) throws -> IdentityIssuer {
                guard [apple, google, issuer != nil].filter({ $0 }).count == 1 else {
                    throw ValidationError("name one issuer: --apple, --google or --issuer URL")
                }
                guard !audiences.isEmpty, audiences.allSatisfy({ !$0.isEmpty }) else {
                    throw ValidationError("name the client IDs tokens must be issued to with --audience (repeatable)")
                }
                if apple { return .apple(audiences: audiences) }
                if google { return .google(audiences: audiences) }
                let url = issuer ?? ""
                guard url.hasPrefix("https://") || url.hasPrefix("http://127.0.0.1") || url.hasPrefix("http://localhost") else {
                    throw ValidationError("--issuer is the issuer's https URL, as its tokens' `iss` claim says")
                }
                return IdentityIssuer(issuer: url, audiences: audiences, jwksURL: jwksURL)
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List the issuers a container accepts.")
            @Argument(help: "The container identifier.") var container: String
            @OptionGroup var data: DataOptions
            @OptionGroup var output: OutputOptions

            func run() async throws {
                let issuers = try await withStore(data) { try await $0.identityIssuers(container: container) }
                let lines = issuers.map { "\($0.issuer)  audiences: \($0.audiences.joined(separator: ", "))"
                    + ($0.jwksURL.map { "  jwks: \($0)" } ?? "") }
                emit(output, json: .array(issuers.map(Issuer.json)), text: lines.isEmpty ? "no issuers" : lines.joined(separator: "\n"))
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Stop accepting an issuer's ID tokens (sessions already opened stay until revoked).")
            @Argument(help: "The container identifier.") var container: String
            @Option(name: .long, help: "The issuer URL, as `nimbus container issuer list` shows it.") var issuer: String
            @OptionGroup var data: DataOptions
            @OptionGroup var output: OutputOptions

            func run() async throws {
                guard try await withStore(data, { try await $0.removeIdentityIssuer(issuer, container: container) }) else {
                    throw ValidationError("\(container) does not accept \(issuer); see `nimbus container issuer list \(container)`")
                }
                emit(output, json: .object(["issuer": .string(issuer), "removed": .bool(true)]), text: "removed \(issuer)")
            }
        }

        static func json(_ issuer: IdentityIssuer) -> JSON {
            var members: [String: JSON] = [
                "issuer": .string(issuer.issuer), "audiences": .array(issuer.audiences.map(JSON.string)),
            ]
            if let jwks = issuer.jwksURL { members["jwksURL"] = .string(jwks) }
            return .object(members)
        }
    }
}
