import ArgumentParser
import Foundation
import NimbusEngines
import NimbusStore
import NimbusServer

/// The `nimbus` command.
@main
struct NimbusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nimbus",
        abstract: "A self-hostable, CloudKit-compatible sync server.",
        subcommands: [
            ServeCommand.self, ContainerCommand.self, UserCommand.self, TokenCommand.self, SessionCommand.self,
            KeyCommand.self, OperatorCommand.self, TraceCommand.self,
            CompactCommand.self, SchemaCommand.self, RoleCommand.self, ExportCommand.self, AssetsCommand.self,
        ])
}

/// Options shared by every command that opens the storage.
struct DataOptions: ParsableArguments {
    @Option(name: .long, help: "The data directory (default: ./nimbus-data, or $NIMBUS_DATA).")
    var data: String?

    @Option(
        name: .long,
        help: "Use PostgreSQL instead of SQLite: a postgres:// URL (default: $NIMBUS_POSTGRES_URL when set).")
    var postgres: String?

    @Option(name: .long, help: "With PostgreSQL: the schema that holds Nimbus's tables.")
    var postgresSchema = "public"

    var directory: String { data ?? ServerConfigurationDefaults.dataDirectory }

    /// The PostgreSQL URL from the option or the environment, if any.
    var postgresURL: String? {
        postgres ?? ProcessInfo.processInfo.environment["NIMBUS_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    func validate() throws {
        if data != nil && postgres != nil {
            throw ValidationError("pass either --data (SQLite) or --postgres (PostgreSQL), not both")
        }
    }

    /// The storage these options name: PostgreSQL when a URL is given, else the data directory.
    var location: StorageLocation {
        if data == nil, let url = postgresURL { return .postgres(url: url, schema: postgresSchema) }
        return .sqlite(directory: directory)
    }
}

/// `--json` output for scripts.
struct OutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Print JSON instead of text.")
    var json = false
}
