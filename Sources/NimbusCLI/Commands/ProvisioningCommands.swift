import ArgumentParser
import Crypto
import Foundation
import Logging
import NimbusServer
import NimbusEngines
import NimbusProtocol
import NimbusStore

/// Opens the storage the options name, runs `body`, and closes it.
func withStore<T>(_ options: DataOptions, _ body: (any NimbusStorage) async throws -> T) async throws -> T {
    var logger = Logger(label: "nimbus")
    logger.logLevel = .warning  // a one-shot command: no "store open" chatter
    let store = try await options.location.open(logger: logger)
    do {
        let result = try await body(store)
        try await store.shutdown()
        return result
    } catch {
        try? await store.shutdown()
        throw error
    }
}

/// Prints `json` as JSON, or `text` otherwise.
func emit(_ output: OutputOptions, json: JSON, text: String) {
    print(output.json ? json.serialized() : text)
}

func tokenJSON(_ token: IssuedToken) -> JSON {
    var members: [String: JSON] = [
        "token": .string(token.token), "kind": .string(token.kind.rawValue), "container": .string(token.container),
        "createdAt": .int(token.createdAt), "revoked": .bool(token.revoked),
    ]
    if let user = token.user {
        members["user"] = .string(user.name)
        members["userRecordName"] = .string(user.recordName)
    }
    return .object(members)
}

struct ContainerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "container", abstract: "Create, list and show containers; set how users sign in and how fast they may send requests.",
        subcommands: [Create.self, List.self, Show.self, SetSignIn.self, Issuer.self, Throttle.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a container and print its API token.")
        @Argument(help: "The container identifier, e.g. iCloud.com.example.app") var identifier: String
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let token = try await withStore(data) { try await $0.createContainer(identifier) }
            emit(
                output, json: .object(["container": .string(identifier), "apiToken": .string(token.token)]),
                text: "container \(identifier)\nAPI token: \(token.token)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List containers.")
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let containers = try await withStore(data) { try await $0.listContainers() }
            emit(output, json: .array(containers.map { .string($0) }), text: containers.joined(separator: "\n"))
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the bytes a container's public database holds in each environment (its quota counts them).")
        @Argument(help: "The container identifier, e.g. iCloud.com.example.app") var identifier: String
        @Option(
            name: .long,
            help: "The quota the server runs with (its --container-quota-bytes), to print beside the usage with what is left.")
        var containerQuotaBytes: Int64?
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func validate() throws { try UsageReport.validate(containerQuotaBytes, flag: "--container-quota-bytes") }

        func run() async throws {
            let reports = try await withStore(data) { store in
                guard try await store.listContainers().contains(identifier) else {
                    return nil as [(environment: ContainerEnvironment, report: UsageReport)]?
                }
                return try await UsageReport.databases(
                    store, container: identifier, scope: .public, owner: DatabaseKey.publicOwner,
                    quota: containerQuotaBytes)
            }
            guard let reports else {
                throw ValidationError("no container \(identifier); `nimbus container list` shows those there are")
            }
            var json: [String: JSON] = ["container": .string(identifier)]
            var text = "container \(identifier)"
            for (environment, report) in reports {
                json[environment.rawValue] = report.json
                text += "\n" + report.text(quotaFlag: "--container-quota-bytes")
            }
            emit(output, json: .object(json), text: text)
        }
    }
}

struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", abstract: "Create users and set whether others can discover them.",
        subcommands: [Create.self, Show.self, Discoverable.self])

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a user in a container: their record name and the bytes their private database holds.")
        @Argument(help: "The user's account name, e.g. alice") var name: String
        @Option(name: .long, help: "The container.") var container: String
        @Option(
            name: .long,
            help: "The quota the server runs with (its --user-quota-bytes), to print beside the usage with what is left.")
        var userQuotaBytes: Int64?
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func validate() throws { try UsageReport.validate(userQuotaBytes, flag: "--user-quota-bytes") }

        func run() async throws {
            let (user, reports) = try await withStore(data) { store in
                guard let user = try await store.user(named: name, container: container) else {
                    return (nil as UserIdentity?, [(environment: ContainerEnvironment, report: UsageReport)]())
                }
                let reports = try await UsageReport.databases(
                    store, container: container, scope: .private, owner: user.recordName, quota: userQuotaBytes)
                return (user, reports)
            }
            guard let user else { throw ValidationError("no user \(name) in \(container)") }
            var json: [String: JSON] = [
                "user": .string(name), "container": .string(container), "userRecordName": .string(user.recordName),
            ]
            var text = "user \(name) in \(container)\nuser record name: \(user.recordName)"
            for (environment, report) in reports {
                json[environment.rawValue] = report.json
                text += "\n" + report.text(quotaFlag: "--user-quota-bytes")
            }
            emit(output, json: .object(json), text: text)
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a user (or sign an existing one into another container) and print a web auth token.")
        @Argument(help: "The user's account name, e.g. alice") var name: String
        @Option(name: .long, help: "The container to sign the user into.") var container: String
        @Option(name: .long) var email: String?
        @Option(name: .long) var firstName: String?
        @Option(name: .long) var lastName: String?
        @Flag(
            name: .long,
            help: "Opt the user in to discovery in the container: others find them by email address or record name.")
        var discoverable = false
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let token = try await withStore(data) { store in
                let token = try await store.createUser(
                    name: name, email: email, firstName: firstName, lastName: lastName, container: container)
                if discoverable { _ = try await store.setDiscoverable(true, userName: name, container: container) }
                return token
            }
            var json: [String: JSON] = [
                "user": .string(name), "container": .string(container),
                "userRecordName": .string(token.user?.recordName ?? ""), "webAuthToken": .string(token.token),
            ]
            if discoverable { json["discoverable"] = .bool(true) }
            emit(
                output, json: .object(json),
                text: "user \(name) in \(container)\(discoverable ? " (discoverable)" : "")\n"
                    + "user record name: \(token.user?.recordName ?? "")\nweb auth token: \(token.token)")
        }
    }

    struct Discoverable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Opt a user in to discovery in a container, or out of it.",
            discussion: """
                A discoverable user is found by the container's other users by email address or user \
                record name (users/discover, users/lookup/email, users/lookup/id); nobody else ever is. \
                Users start out not discoverable; apps can also ask through users/discoverability.
                """)
        enum State: String, ExpressibleByArgument, CaseIterable { case on, off }

        @Argument(help: "The user's account name, e.g. alice") var name: String
        @Argument(help: "on: discoverable; off: hidden.") var state: State
        @Option(name: .long, help: "The container the choice applies to.") var container: String
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let user = try await withStore(data) {
                try await $0.setDiscoverable(state == .on, userName: name, container: container)
            }
            emit(
                output,
                json: .object([
                    "user": .string(name), "container": .string(container), "userRecordName": .string(user.recordName),
                    "discoverable": .bool(state == .on),
                ]),
                text: "user \(name) in \(container) is \(state == .on ? "discoverable" : "not discoverable")")
        }
    }
}

struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "Create, list and revoke API and web auth tokens.",
        subcommands: [Create.self, List.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Issue another API token for a container.")
        @Option(name: .long) var container: String
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let token = try await withStore(data) { try await $0.createAPIToken(container: container) }
            emit(output, json: tokenJSON(token), text: "API token: \(token.token)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List tokens.")
        @Option(name: .long, help: "Only this container's tokens.") var container: String?
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let tokens = try await withStore(data) { try await $0.listTokens(container: container) }
            let lines = tokens.map { token in
                "\(token.token)  \(token.kind.rawValue)  \(token.container)  \(token.user?.name ?? "-")\(token.revoked ? "  revoked" : "")"
            }
            emit(output, json: .array(tokens.map(tokenJSON)), text: lines.joined(separator: "\n"))
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a token; it stops working at once.")
        @Argument var token: String
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            guard try await withStore(data, { try await $0.revokeToken(token) }) else {
                throw ValidationError("no active token \(token)")
            }
            emit(output, json: .object(["revoked": .string(token)]), text: "revoked \(token)")
        }
    }
}

struct KeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key", abstract: "Create, list and revoke server-to-server keys.",
        subcommands: [Create.self, List.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an ECDSA P-256 key pair: store the public key, write the private key as PEM.")
        @Option(name: .long) var container: String
        @Option(name: .long, help: "Where to write the private key (PEM).") var out: String
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let privateKey = P256.Signing.PrivateKey()
            let keyID = Data(SHA256.hash(data: privateKey.publicKey.derRepresentation)).map {
                String(format: "%02x", $0)
            }.joined()
            try await withStore(data) { try await $0.addServerKey(
                keyID: keyID, container: container, publicKeyPEM: privateKey.publicKey.pemRepresentation) }
            try privateKey.pemRepresentation.write(toFile: out, atomically: true, encoding: .utf8)
            chmod(out, 0o600)
            emit(
                output, json: .object(["keyID": .string(keyID), "privateKeyPath": .string(out)]),
                text: "key ID: \(keyID)\nprivate key written to \(out)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List server-to-server keys.")
        @Option(name: .long) var container: String?
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let keys = try await withStore(data) { try await $0.listServerKeys(container: container) }
            let json: JSON = .array(
                keys.map {
                    .object([
                        "keyID": .string($0.keyID), "container": .string($0.container), "createdAt": .int($0.createdAt),
                        "revoked": .bool($0.revoked),
                    ])
                })
            let text = keys.map { "\($0.keyID)  \($0.container)\($0.revoked ? "  revoked" : "")" }.joined(separator: "\n")
            emit(output, json: json, text: text)
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a server-to-server key.")
        @Argument var keyID: String
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            guard try await withStore(data, { try await $0.revokeServerKey(keyID: keyID) }) else {
                throw ValidationError("no active key \(keyID)")
            }
            emit(output, json: .object(["revoked": .string(keyID)]), text: "revoked \(keyID)")
        }
    }
}
