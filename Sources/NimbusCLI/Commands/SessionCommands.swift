import ArgumentParser
import Foundation
import NimbusProtocol
import NimbusServer
import NimbusStore

/// `nimbus session list|revoke`: every user's sessions, for operators.
struct SessionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "session", abstract: "List and revoke users' sessions (web auth tokens and their devices).",
        subcommands: [List.self, Revoke.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List sessions, oldest first, revoked ones too.")
        @Option(name: .long, help: "Only this container's sessions.") var container: String?
        @Option(name: .long, help: "Only this user's sessions (account name).") var user: String?
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let sessions = try await withStore(data) { try await $0.listSessions(container: container, userName: user) }
            let json = JSON.array(sessions.map(Self.json))
            let lines = sessions.map { session in
                "\(session.id)  \(session.userName)  \(session.container)  \(session.device.name) (\(session.device.platform))  "
                    + "last seen \(Self.date(session.lastSeenAt))\(session.revoked ? "  revoked" : "")"
            }
            emit(output, json: json, text: lines.isEmpty ? "no sessions" : lines.joined(separator: "\n"))
        }

        static func json(_ session: Session) -> JSON {
            .object([
                "sessionID": .string(session.id), "user": .string(session.userName),
                "userRecordName": .string(session.user.recordName), "container": .string(session.container),
                "deviceName": .string(session.device.name), "platform": .string(session.device.platform),
                "created": .int(session.createdAt), "lastSeen": .int(session.lastSeenAt), "revoked": .bool(session.revoked),
            ])
        }

        static func date(_ millis: Int64) -> String {
            ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a session: its token stops working and its device's push connections close.")
        @Argument(help: "The session ID (see `nimbus session list`).") var id: String
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            guard try await withStore(data, { try await $0.revokeSession(id: id) }) else {
                throw ValidationError("no unrevoked session \(id); list them with `nimbus session list`")
            }
            emit(output, json: .object(["sessionID": .string(id), "revoked": .bool(true)]), text: "revoked \(id)")
        }
    }
}

extension ContainerCommand {
    /// `nimbus container set-signin`: built-in accounts, redirect origins, account deletion.
    struct SetSignIn: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-signin",
            abstract: "Set how users sign into a container: built-in accounts and where the sign-in page may return.",
            discussion: """
                Options not given keep their value; the settings are printed afterwards. \
                --redirect-origin adds an origin (repeat it for several); --clear-redirect-origins removes them all first.
                """)
        enum State: String, ExpressibleByArgument, CaseIterable { case on, off }

        @Argument(help: "The container.") var container: String
        @Option(name: .long, help: "Built-in accounts (email and password): on or off.") var passwords: State?
        @Option(name: .long, help: "An origin the sign-in page may send users back to, e.g. https://app.example.")
        var redirectOrigin: [String] = []
        @Flag(name: .long, help: "Remove every redirect origin (before adding any given).") var clearRedirectOrigins = false
        @Option(name: .long, help: "Whether deleting an account also deletes the public records the user created.")
        var deletePublicRecords: State?
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            var origins: [String] = []
            for text in redirectOrigin {
                guard let origin = SignInOrigins.normalized(text) else {
                    throw ValidationError(
                        "--redirect-origin '\(text)' is not an origin: give http(s)://host[:port], no path")
                }
                origins.append(origin)
            }
            let settings = try await withStore(data) { store in
                var settings = try await store.signInSettings(container: container)
                if let passwords { settings.passwords = passwords == .on }
                if clearRedirectOrigins { settings.redirectOrigins = [] }
                for origin in origins where !settings.redirectOrigins.contains(origin) {
                    settings.redirectOrigins.append(origin)
                }
                if let deletePublicRecords { settings.deletePublicRecords = deletePublicRecords == .on }
                try await store.setSignInSettings(settings, container: container)
                return settings
            }
            emit(
                output,
                json: .object([
                    "container": .string(container), "passwords": .bool(settings.passwords),
                    "redirectOrigins": .array(settings.redirectOrigins.map(JSON.string)),
                    "deletePublicRecords": .bool(settings.deletePublicRecords),
                ]),
                text: "container \(container)\nbuilt-in accounts: \(settings.passwords ? "on" : "off")\n"
                    + "redirect origins: \(settings.redirectOrigins.isEmpty ? "none" : settings.redirectOrigins.joined(separator: " "))\n"
                    + "account deletion removes public records: \(settings.deletePublicRecords ? "yes" : "no")")
        }
    }
}
