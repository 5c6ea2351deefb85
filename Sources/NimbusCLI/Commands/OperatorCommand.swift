import ArgumentParser
import Foundation
import NimbusProtocol
import NimbusServer
import NimbusStore

/// `nimbus operator create|password|list`: the dashboard's operator accounts.
struct OperatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "operator", abstract: "Create and list the dashboard's operator accounts.",
        subcommands: [Create.self, Password.self, List.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an operator who signs in to the dashboard (`nimbus serve` prints its URL).",
            discussion: """
                The password is asked for at the terminal, or read from the first line of standard input \
                with --password-stdin (8 to 72 bytes). It is stored as a bcrypt hash.
                """)
        @Argument(help: "The operator's name (letters, digits, '.', '-', '_', '@').") var name: String
        @OptionGroup var password: PasswordInput
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let hash = try await password.hash()
            do {
                try await withStore(data) { try await $0.createOperator(name: name, passwordHash: hash, now: WallClock.system.nowMillis()) }
            } catch let error as AccountError {
                throw ValidationError(error.message)
            }
            emit(
                output, json: .object(["operator": .string(name)]),
                text: "operator \(name) created; sign in at the dashboard URL `nimbus serve` prints")
        }
    }

    struct Password: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set an operator's password; their dashboard sessions end.")
        @Argument var name: String
        @OptionGroup var password: PasswordInput
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let hash = try await password.hash()
            guard try await withStore(data, { try await $0.setOperatorPassword(name: name, passwordHash: hash) }) else {
                throw ValidationError("no operator \(name); create one with `nimbus operator create \(name)`")
            }
            emit(output, json: .object(["operator": .string(name)]), text: "password of \(name) changed")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List operators.")
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let operators = try await withStore(data) { try await $0.listOperators() }
            emit(
                output,
                json: .array(operators.map { .object(["name": .string($0.name), "createdAt": .int($0.createdAt)]) }),
                text: operators.isEmpty ? "no operators" : operators.map(\.name).joined(separator: "\n"))
        }
    }


    /// A password from standard input's first line, or asked for twice at the terminal
    /// without echo; checked with the rules of built-in accounts.
    static func readPassword(fromStdin: Bool) throws -> String {
        let password: String
        if fromStdin || isatty(STDIN_FILENO) == 0 {
            guard let line = readLine(strippingNewline: true) else {
                throw ValidationError("no password on standard input")
            }
            password = line
        } else {
            let first = String(cString: getpass("Password: "))
            let second = String(cString: getpass("Again: "))
            guard first == second else { throw ValidationError("the two passwords differ") }
            password = first
        }
        do { try PasswordHasher.check(password) } catch { throw ValidationError(error.reason) }
        return password
    }
}

/// Where an operator's password comes from: the terminal, or standard input.
struct PasswordInput: ParsableArguments {
    @Flag(name: .long, help: "Read the password from standard input instead of asking for it.")
    var passwordStdin = false

    /// The bcrypt hash (the cost of built-in accounts) of the password read.
    func hash() async throws -> String {
        try await PasswordHasher(cost: SignInSettings().passwordCost).hash(OperatorCommand.readPassword(fromStdin: passwordStdin))
    }
}
