import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with `posix_spawn`, for the tools that run `nimbus` or themselves
/// as a child (the benches' servers and flooder, the tests' `nimbus serve`).
///
/// Not Foundation's `Process`: on Linux its `run()` reads past a buffer while it lists
/// `/proc/self/fd` and crashes now and then (swift-corelibs-foundation#5472; seen in the full
/// test suite on Swift 6.3.1). Here the child closes every descriptor above 2 itself, so
/// nothing is listed.
///
/// ```swift
/// let child = try ChildProcess(executable: "/usr/bin/env", arguments: ["true"], output: .pipe)
/// let status = child.waitUntilExit()
/// ```
package final class ChildProcess: Sendable {
    /// Where one of the child's standard streams goes.
    package enum Stream: Sendable {
        /// This process's own.
        case inherit
        /// `/dev/null`.
        case discard
        /// A pipe this process holds the other end of (``standardInput``, ``standardOutput``).
        case pipe
    }

    package let processIdentifier: pid_t
    /// The writing end of the child's standard input, when it is a pipe.
    package let standardInput: FileHandle?
    /// The reading end of the child's standard output, when it is a pipe.
    package let standardOutput: FileHandle?
    /// The exit status once waited for (`nil`: not yet).
    private let exitStatus = NIOLockedValueBox<Int32?>(nil)

    /// Starts `executable` (a path) with `arguments` (not counting its name) and `environment`
    /// (`nil`: this process's). Its standard error can be inherited or discarded.
    package init(
        executable: String, arguments: [String], environment: [String: String]? = nil, input: Stream = .inherit,
        output: Stream = .inherit, error: Stream = .inherit
    ) throws {
        #if canImport(Glibc)
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #else
        var actions: posix_spawn_file_actions_t? = nil
        var attributes: posix_spawnattr_t? = nil
        #endif
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attributes)
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        var childEnds: [Int32] = []
        defer { for descriptor in childEnds { close(descriptor) } }
        func route(_ stream: Stream, to target: Int32, childReads: Bool) throws -> FileHandle? {
            switch stream {
            case .inherit:
                #if !canImport(Glibc)
                // POSIX_SPAWN_CLOEXEC_DEFAULT (below) would close it otherwise.
                posix_spawn_file_actions_addinherit_np(&actions, target)
                #endif
                return nil
            case .discard:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", childReads ? O_RDONLY : O_WRONLY, 0)
                return nil
            case .pipe:
                var ends: [Int32] = [-1, -1]
                guard pipe(&ends) == 0 else { throw ChildProcessError("pipe failed: errno \(errno)") }
                let (child, parent) = childReads ? (ends[0], ends[1]) : (ends[1], ends[0])
                _ = fcntl(parent, F_SETFD, FD_CLOEXEC)
                childEnds.append(child)
                posix_spawn_file_actions_adddup2(&actions, child, target)
                return FileHandle(fileDescriptor: parent, closeOnDealloc: true)
            }
        }
        let input = try route(input, to: 0, childReads: true)
        let output = try route(output, to: 1, childReads: false)
        // Nobody would read a pipe of the child's errors: `.pipe` discards them.
        _ = try route(error == .pipe ? .discard : error, to: 2, childReads: false)
        // Every other descriptor of this process stays out of the child.
        // The child starts with no signal blocked and every signal's default action: a spawn
        // inherits the calling thread's mask, and this process's threads (NIO's, Dispatch's)
        // block most signals, so a child such as nginx would never see the SIGTERM that stops it.
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var everySignal = sigset_t()
        sigfillset(&everySignal)
        posix_spawnattr_setsigdefault(&attributes, &everySignal)
        var flags = Int32(POSIX_SPAWN_SETSIGMASK) | Int32(POSIX_SPAWN_SETSIGDEF)
        #if canImport(Glibc)
        // glibc 2.34+; not in the Glibc module's headers, so looked up (older: inherited).
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        }
        #else
        flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)
        #endif
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let environment = environment ?? ProcessInfo.processInfo.environment
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        // (The pipes' ends of this process close with their file handles.)
        guard result == 0 else { throw ChildProcessError("could not start \(executable): errno \(result)") }
        processIdentifier = pid
        standardInput = input
        standardOutput = output
    }

    /// Sends `signal` (SIGKILL, SIGTERM, SIGINT…) unless the child was already waited for
    /// (its process ID may then belong to another process).
    package func send(_ signal: Int32) {
        exitStatus.withLockedValue { status in
            if status == nil { _ = kill(processIdentifier, signal) }
        }
    }

    /// Waits for the child to end; returns its exit status (128 + the signal that ended it).
    /// Waiting again returns the same status.
    @discardableResult
    package func waitUntilExit() -> Int32 {
        if let status = exitStatus.withLockedValue({ $0 }) { return status }
        var raw: Int32 = 0
        var waited: pid_t
        repeat { waited = waitpid(processIdentifier, &raw, 0) } while waited == -1 && errno == EINTR
        guard waited == processIdentifier else { return exitStatus.withLockedValue { $0 } ?? -1 }  // waited for elsewhere
        let signal = raw & 0x7f
        let code = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
        exitStatus.withLockedValue { $0 = code }
        return code
    }
}

/// A child process could not be started.
package struct ChildProcessError: Error, CustomStringConvertible {
    package let description: String

    init(_ description: String) {
        self.description = description
    }
}
