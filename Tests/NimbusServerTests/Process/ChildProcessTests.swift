import Foundation
import NimbusServer
import Testing

/// `ChildProcess`: pipes both ways, the exit status, a signal's, and no descriptor of this
/// process left open in the child.
@Suite("Child process")
struct ChildProcessTests {
    @Test func pipesCarryTextBothWaysAndTheExitStatusComesBack() throws {
        let child = try ChildProcess(
            executable: "/bin/sh", arguments: ["-c", "read line; echo \"got $line\"; exit 3"], input: .pipe, output: .pipe)
        child.standardInput?.write(Data("hello\n".utf8))
        try child.standardInput?.close()
        let text = String(decoding: child.standardOutput?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        #expect(text == "got hello\n")
        #expect(child.waitUntilExit() == 3)
        #expect(child.waitUntilExit() == 3, "waiting again gives the same status")
    }

    @Test func aKilledChildReportsTheSignal() throws {
        let child = try ChildProcess(executable: "/bin/sleep", arguments: ["60"], error: .discard)
        child.send(SIGKILL)
        #expect(child.waitUntilExit() == 128 + SIGKILL)
        child.send(SIGKILL)  // after the wait: no longer sent (its process ID may be reused)
    }

    @Test func theChildInheritsNoOtherDescriptor() throws {
        let pipe = Pipe()  // open in this process, without close-on-exec
        defer { try? pipe.fileHandleForReading.close() }
        #if os(Linux)
        let child = try ChildProcess(executable: "/bin/ls", arguments: ["/proc/self/fd"], output: .pipe)
        let listed = String(decoding: child.standardOutput?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
            .split(separator: "\n").compactMap { Int($0) }
        child.waitUntilExit()
        // 0, 1, 2 and the directory ls itself reads.
        #expect(listed.filter { $0 > 2 }.count <= 1, "\(listed)")
        #endif
        _ = pipe
    }

    @Test func aMissingExecutableIsAnError() {
        #expect(throws: ChildProcessError.self) { try ChildProcess(executable: "/nonexistent/nimbus", arguments: []) }
    }
}
