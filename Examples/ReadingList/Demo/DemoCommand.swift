import ArgumentParser
import Foundation
import NIOConcurrencyHelpers
import Nimbus
import NimbusProtocol
import NimbusServer
import NimbusSync
import ReadingList
import ReadingListSandbox


/// `nimbus-demo`: the Reading List scenario, live. An embedded server in a temporary
/// directory, two devices of one user (two sync engines, two local stores, two push
/// channels), and a scripted sequence whose every step is a real run over HTTP and
/// WebSocket, timed from the action on one device to the result in the other's store.
@main
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nimbus-demo",
        abstract: "Two devices of one user sync a reading list through an embedded server, step by step, timed.",
        discussion: """
            Starts a server on 127.0.0.1 with a fresh temporary data directory, provisions a user, \
            and runs two devices of that user: a bookmark made on A appears on B; an un-bookmark \
            disappears; B goes offline, A edits, B catches up; both edit the same article at once and \
            the merge policy decides. Each step prints its measured latency.
            """)

    @Flag(name: .long, help: "Keep the temporary directory (server data and both devices' stores).")
    var keepData = false

    @Option(name: .long, help: "Seconds to wait for any one step before failing.")
    var timeout: Double = 10

    @Flag(name: .long, help: "Also print each device's push channel and sync engine events.")
    var verbose = false

    func run() async throws {
        let sandbox = try await Sandbox.start(name: "demo")
        let script = try DemoScript(
            sandbox: sandbox, timeout: .milliseconds(Int64(timeout * 1000)), verbose: verbose)
        do {
            try await script.run()
            await script.finish()
        } catch {
            await script.finish()
            await sandbox.stop(keep: keepData)
            throw error
        }
        await sandbox.stop(keep: keepData)
        if keepData { print("Kept \(sandbox.directory)") }
    }
}
