import ArgumentParser
import Foundation
import NimbusProtocol
import NimbusStore

/// `nimbus role grant|revoke|list`: who holds the schema's security roles (`CREATE ROLE
/// editors;`) in a container environment, as CloudKit's console assigns them to user records.
/// The public database's `GRANT … TO editors` permissions then apply to those users
/// (``RoleAssignments``). Works beside a running server, which applies a change from its next
/// request on.
struct RoleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "role", abstract: "Grant a schema's security roles to users, revoke them, list who holds them.",
        subcommands: [Grant.self, Revoke.self, List.self])

    /// The options naming a role holder.
    struct Target: ParsableArguments {
        @Argument(help: "The role, as the schema declares it (CREATE ROLE name;).") var role: String
        @Option(name: .long, help: "The user's account name, e.g. alice.") var user: String
        @Option(name: .long, help: "The container.") var container: String
        @Option(name: .long, help: "development or production: roles are held per environment.")
        var environment = "development"
    }

    struct Grant: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Grant a role to a user in one environment of a container.")
        @OptionGroup var target: Target
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws { try await RoleCommand.set(true, target, data, output) }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a role from a user in one environment.")
        @OptionGroup var target: Target
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws { try await RoleCommand.set(false, target, data, output) }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the roles a container environment's schema declares and the users holding each.")
        @Option(name: .long, help: "The container.") var container: String
        @Option(name: .long, help: "development or production.") var environment = "development"
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let environment = try RoleCommand.environment(environment)
            let roles: [(role: String, users: [String])] = try await withStore(data) { store in
                try await SchemaCommand.requireContainer(container, in: store)
                let schema = try await store.schema(container: container, environment: environment).schema
                var roles: [(role: String, users: [String])] = []
                for role in schema.roles.sorted() {
                    var users: [String] = []
                    for recordName in (schema.roleMembers[role] ?? []).sorted() {
                        let user = try await store.user(recordName: recordName, container: container)
                        users.append(user.map { "\($0.name) (\(recordName))" } ?? recordName)
                    }
                    roles.append((role, users))
                }
                return roles
            }
            emit(
                output,
                json: .object(
                    Dictionary(uniqueKeysWithValues: roles.map { ($0.role, JSON.array($0.users.map(JSON.string))) })),
                text: roles.isEmpty
                    ? "the \(environment.rawValue) schema of \(container) declares no roles"
                    : roles.map { "\($0.role): " + ($0.users.isEmpty ? "nobody" : $0.users.joined(separator: ", ")) }
                        .joined(separator: "\n"))
        }
    }

    static func environment(_ name: String) throws -> ContainerEnvironment {
        guard let environment = ContainerEnvironment(rawValue: name) else {
            throw ValidationError("--environment must be development or production")
        }
        return environment
    }

    static func set(_ granted: Bool, _ target: Target, _ data: DataOptions, _ output: OutputOptions) async throws {
        let environment = try environment(target.environment)
        let (user, changed): (UserIdentity, Bool)
        do {
            (user, changed) = try await withStore(data) { store in
                try await SchemaCommand.requireContainer(target.container, in: store)
                guard let user = try await store.user(named: target.user, container: target.container) else {
                    throw ValidationError("no user \(target.user) in \(target.container)")
                }
                let changed = try await RoleAssignments.set(
                    granted, role: target.role, userRecordName: user.recordName, container: target.container,
                    environment: environment, in: store)
                return (user, changed)
            }
        } catch let error as CloudKitError {
            throw ValidationError(error.reason)
        }
        let state =
            granted
            ? (changed ? "now holds" : "already held") : (changed ? "no longer holds" : "did not hold")
        emit(
            output,
            json: .object([
                "user": .string(user.name), "userRecordName": .string(user.recordName), "role": .string(target.role),
                "container": .string(target.container), "environment": .string(environment.rawValue),
                "granted": .bool(granted), "changed": .bool(changed),
            ]),
            text: "\(user.name) \(state) role \(target.role) in \(target.container) (\(environment.rawValue))")
    }
}
