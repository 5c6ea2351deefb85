import ArgumentParser
import NimbusServer

/// The `nimbus` command.
@main
struct NimbusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nimbus",
        abstract: "A self-hostable, CloudKit-compatible sync server.",
        subcommands: [
            ServeCommand.self, ContainerCommand.self, UserCommand.self, TokenCommand.self, KeyCommand.self,
            CompactCommand.self, BenchCommand.self, DemoCommand.self,
        ])
}

/// Options shared by every command that opens the storage.
struct DataOptions: ParsableArguments {
    @Option(name: .long, help: "The data directory (default: ./nimbus-data, or $NIMBUS_DATA).")
    var data: String?

    var directory: String { data ?? ServerConfigurationDefaults.dataDirectory }

    /// The storage these options name.
    var location: StorageLocation { .sqlite(directory: directory) }
}

/// `--json` output for scripts.
struct OutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Print JSON instead of text.")
    var json = false
}
