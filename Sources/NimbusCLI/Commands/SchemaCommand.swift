import ArgumentParser
import Foundation
import NimbusProtocol
import NimbusStore

/// `nimbus schema export|deploy`: the schema of a container environment as CloudKit's
/// schema language, and its promotion to production. Works beside a running server, which
/// applies a deployed schema from its next request on.
struct SchemaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema", abstract: "Export a container's schema; deploy it to production.",
        subcommands: [Export.self, Deploy.self])

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write the schema (record types, fields, indexes, permissions) of an environment.")
        @Option(name: .long, help: "The container identifier.") var container: String
        @Option(name: .long, help: "development or production.") var environment = "development"
        @Option(name: .long, help: "Write to this file instead of standard output.") var output: String?
        @OptionGroup var data: DataOptions

        func run() async throws {
            guard let environment = ContainerEnvironment(rawValue: environment) else {
                throw ValidationError("--environment must be development or production")
            }
            let text = try await withStore(data) { store in
                try await SchemaCommand.requireContainer(container, in: store)
                return try await SchemaDeployment.export(container: container, environment: environment, from: store)
            }
            if let output {
                try text.write(toFile: output, atomically: true, encoding: .utf8)
            } else {
                print(text, terminator: "")
            }
        }
    }

    struct Deploy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Promote the development schema (or a schema file) to production.",
            discussion: """
                Deploys are additive: record types and fields in production cannot be removed and \
                field types cannot change. Indexes and permissions become those of the deployed schema.
                """)
        @Option(name: .long, help: "The container identifier.") var container: String
        @Option(name: .long, help: "A schema file (as `nimbus schema export` writes) to deploy instead of the development schema.")
        var file: String?
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            var schema: ContainerSchema?
            if let file {
                let text: String
                do { text = try String(contentsOfFile: file, encoding: .utf8) } catch {
                    throw ValidationError("cannot read \(file): \(error.localizedDescription)")
                }
                do { schema = try SchemaFile.parse(text) } catch { throw ValidationError("\(file): \(error.reason)") }
            }
            let report: SchemaDeployment.Report
            do {
                report = try await withStore(data) { [schema] store in
                    try await SchemaCommand.requireContainer(container, in: store)
                    return try await SchemaDeployment.deploy(schema, container: container, to: store)
                }
            } catch let error as CloudKitError {
                throw ValidationError(error.reason)
            }
            var lines = ["production schema of \(container): version \(report.version)"]
            if report.unchanged { lines.append("unchanged") }
            lines += report.addedRecordTypes.map { "+ record type \($0)" }
            lines += report.addedFields.map { "+ field \($0)" }
            lines += report.addedIndexes.map { "+ index \($0)" }
            lines += report.removedIndexes.map { "- index \($0)" }
            emit(
                output,
                json: [
                    "container": .string(container), "version": .int(report.version),
                    "addedRecordTypes": .array(report.addedRecordTypes.map(JSON.string)),
                    "addedFields": .array(report.addedFields.map(JSON.string)),
                    "addedIndexes": .array(report.addedIndexes.map(JSON.string)),
                    "removedIndexes": .array(report.removedIndexes.map(JSON.string)),
                ],
                text: lines.joined(separator: "\n"))
        }
    }

    static func requireContainer(_ container: String, in store: any NimbusStorage) async throws {
        guard try await store.listContainers().contains(container) else {
            throw ValidationError("no container \(container); create it with `nimbus container create \(container)`")
        }
    }
}
