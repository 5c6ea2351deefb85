// The push bench's raw sockets exist on Linux only (epoll, SO_TIMESTAMPNS).
#if os(Linux)
import CBenchSockets
import Foundation
import NIOConcurrencyHelpers

/// The push devices of `nimbus-bench push`: WebSocket connections on raw sockets, all read
/// by one thread waiting on them with epoll, each push stamped with the kernel's arrival
/// time (``Arrival``).
///
/// The bench runs up to 10 000 devices on the cores the servers use, so what a device
/// costs is taken from the server being measured. Each device speaks the little of
/// RFC 6455 it needs — the upgrade request, unmasked server frames, masked pongs — and
/// notes only the `seq` of each push. One thread for all of them: with 1 000 devices woken
/// by one save, one `epoll_wait` hands it many sockets at once, where a thread per core
/// would be woken for each.
final class DeviceFleet: Sendable {
    private let tally = FleetTally()
    private let readers: [DeviceReader]

    /// `threads` reader threads (devices are dealt to them in turn); one unless comparing.
    /// - Parameter numberingFrom: when set, a push without a `seq` (a database notification,
    ///   which carries no record) is numbered by its order on its device, the first one
    ///   `numberingFrom`: each save pushes once to each device, in order.
    init(threads: Int = 1, numberingFrom: Int? = nil) throws {
        let tally = tally
        readers = try (0..<max(1, threads)).map { _ in try DeviceReader(tally: tally, numberingFrom: numberingFrom) }
    }

    /// Connects `urls.count` devices, `concurrency` at a time; returns once all are upgraded.
    func connect(_ urls: [String], concurrency: Int = 100) async throws {
        var connected = tally.counts.opened
        for start in stride(from: 0, to: urls.count, by: concurrency) {
            for url in urls[start..<min(start + concurrency, urls.count)] {
                let endpoint = try BenchEndpoint(url)
                let fd = try BenchSocket.connect(endpoint)
                do {
                    try BenchSocket.send(fd, Self.upgradeRequest(endpoint))
                    try BenchSocket.setNonBlocking(fd)
                    try readers[connected % readers.count].add(fd)
                } catch {
                    cbench_close(fd)
                    throw error
                }
                connected += 1
            }
            try await tally.wait(until: .opened(connected), timeout: .seconds(30))
        }
    }

    /// Push frames read so far.
    var pushCount: Int { tally.counts.pushes }
    /// Why a device failed (refused, or closed by the server), if one did.
    var failure: String? { tally.failure }

    /// Returns once `count` push frames have been read (over all devices); throws after `timeout`.
    func waitForPushes(_ count: Int, timeout: Duration) async throws {
        try await tally.wait(until: .pushes(count), timeout: timeout)
    }

    /// Closes every device; returns when each push arrived, by the `seq` it carried.
    func stop() async -> [Int: [Arrival]] {
        var all: [Int: [Arrival]] = [:]
        for reader in readers { all.merge(await reader.stop(), uniquingKeysWith: +) }
        return all
    }

    private static func upgradeRequest(_ endpoint: BenchEndpoint) -> [UInt8] {
        let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        return Array(
            ("GET \(endpoint.target) HTTP/1.1\r\nHost: \(endpoint.host):\(endpoint.port)\r\nUpgrade: websocket\r\n"
                + "Connection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\n\r\n").utf8)
    }
}

/// What the fleet's readers have seen, and the bench's tasks waiting for a count.
private final class FleetTally: Sendable {
    private let state = NIOLockedValueBox(State())

    private struct State {
        var counts = (opened: 0, pushes: 0)
        var failure: String?
        var waiters: [Int: (condition: Condition, continuation: CheckedContinuation<Void, any Error>)] = [:]
        var nextWaiter = 0

        func holds(_ condition: Condition) -> Bool {
            switch condition {
            case .opened(let count): counts.opened >= count
            case .pushes(let count): counts.pushes >= count
            }
        }

        /// The outcome for a waiter now: `nil` while it must wait.
        func outcome(_ condition: Condition) -> Result<Void, any Error>? {
            if let failure { return .failure(BenchError("a device failed: \(failure)")) }
            return holds(condition) ? .success(()) : nil
        }
    }

    /// What ``wait(until:timeout:)`` waits for.
    enum Condition: Sendable {
        case opened(Int)
        case pushes(Int)
    }

    var counts: (opened: Int, pushes: Int) { state.withLockedValue { $0.counts } }
    var failure: String? { state.withLockedValue { $0.failure } }

    /// A reader's news (once per `epoll_wait`): wakes the waiters it satisfies.
    func add(opened: Int, pushes: Int, failure: String?) {
        let woken = state.withLockedValue { state in
            state.counts.opened += opened
            state.counts.pushes += pushes
            if let failure, state.failure == nil { state.failure = failure }
            var woken: [(CheckedContinuation<Void, any Error>, Result<Void, any Error>)] = []
            for (id, waiter) in state.waiters {
                guard let outcome = state.outcome(waiter.condition) else { continue }
                state.waiters[id] = nil
                woken.append((waiter.continuation, outcome))
            }
            return woken
        }
        for (continuation, outcome) in woken { continuation.resume(with: outcome) }
    }

    /// Returns once `condition` holds; throws if a device failed or after `timeout`.
    func wait(until condition: Condition, timeout: Duration) async throws {
        let id = state.withLockedValue { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await withCheckedThrowingContinuation { continuation in
                    let now = self.state.withLockedValue { state in
                        let outcome = state.outcome(condition)
                        if outcome == nil { state.waiters[id] = (condition, continuation) }
                        return outcome
                    }
                    if let now { continuation.resume(with: now) }
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                let (waiter, counts) = self.state.withLockedValue { ($0.waiters.removeValue(forKey: id), $0.counts) }
                waiter?.continuation.resume(
                    throwing: BenchError("waited \(timeout) for \(condition): \(counts.opened) devices open, \(counts.pushes) pushes"))
            }
            try await group.next()
            group.cancelAll()
            try await group.waitForAll()
        }
    }
}

/// A thread that reads its devices' sockets. Its devices and the arrivals it notes are its
/// own; counts go to the fleet's tally, and the arrivals cross in a lock when it stops.
private final class DeviceReader: Sendable {
    private let epoll: Int32
    private let tally: FleetTally
    private let shared = NIOLockedValueBox(Shared())

    private struct Shared {
        /// Sockets added but not yet seen by the thread.
        var added: Set<Int32> = []
        var stopping = false
        var result: [Int: [Arrival]]?
        var stopped: CheckedContinuation<[Int: [Arrival]], Never>?
    }

    private let numberingFrom: Int?

    init(tally: FleetTally, numberingFrom: Int?) throws {
        self.numberingFrom = numberingFrom
        let fd = cbench_epoll_create()
        guard fd >= 0 else { throw BenchError("epoll_create1: \(BenchSocket.describe(fd))") }
        epoll = fd
        self.tally = tally
        Thread.detachNewThread { [self] in self.run() }
    }

    func add(_ fd: Int32) throws {
        shared.withLockedValue { _ = $0.added.insert(fd) }
        let result = cbench_epoll_add(epoll, fd)
        guard result == 0 else { throw BenchError("epoll_ctl: \(BenchSocket.describe(result))") }
    }

    /// Ends the thread (within its 20 ms `epoll_wait`), which closes the sockets; returns its arrivals.
    func stop() async -> [Int: [Arrival]] {
        await withCheckedContinuation { continuation in
            let result = shared.withLockedValue { shared in
                shared.stopping = true
                if shared.result == nil { shared.stopped = continuation }
                return shared.result
            }
            if let result { continuation.resume(returning: result) }
        }
    }

    // MARK: The thread

    private func run() {
        var devices: [Int32: DeviceSocket] = [:]
        var arrivals: [Int: [Arrival]] = [:]
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var ready = [Int32](repeating: 0, count: 256)
        while !shared.withLockedValue({ $0.stopping }) {
            let count = ready.withUnsafeMutableBufferPointer { cbench_epoll_wait(epoll, $0.baseAddress, Int32($0.count), 20) }
            guard count > 0 else { continue }
            var opened = 0
            var pushes = 0
            var failure: String?
            for index in 0..<Int(count) {
                let fd = ready[index]
                if devices[fd] == nil {
                    guard shared.withLockedValue({ $0.added.remove(fd) }) != nil else { continue }
                    devices[fd] = DeviceSocket(fd: fd, numberingFrom: numberingFrom)
                }
                var kernel: Int64 = 0
                let read = buffer.withUnsafeMutableBufferPointer { cbench_receive(fd, $0.baseAddress, $0.count, &kernel) }
                if read == -Int(EAGAIN) { continue }
                guard read > 0 else {
                    if devices[fd]?.isOpen == false { failure = "the connection closed before the upgrade" }
                    devices[fd] = nil
                    cbench_close(fd)
                    continue
                }
                let now = BenchSocket.now
                let arrival = Arrival(kernel: kernel == 0 ? now : kernel, read: now)
                let event = buffer.withUnsafeBufferPointer {
                    devices[fd]!.consume(UnsafeBufferPointer(rebasing: $0[..<read]), at: arrival, into: &arrivals)
                }
                if event.opened { opened += 1 }
                pushes += event.pushes
                if let reason = event.failure { failure = reason }
                if event.closed {
                    devices[fd] = nil
                    cbench_close(fd)
                }
            }
            if opened > 0 || pushes > 0 || failure != nil { tally.add(opened: opened, pushes: pushes, failure: failure) }
        }
        for fd in devices.keys { cbench_close(fd) }
        for fd in shared.withLockedValue({ $0.added }) { cbench_close(fd) }
        cbench_close(epoll)
        let stopped = shared.withLockedValue { [arrivals] shared in
            shared.result = arrivals
            return shared.stopped.take()
        }
        stopped?.resume(returning: arrivals)
    }
}

/// One device's socket, on the reader's thread: the upgrade answer, then frames.
private struct DeviceSocket {
    let fd: Int32
    var isOpen = false
    /// Bytes of an incomplete head or frame, waiting for the rest.
    var pending: [UInt8] = []

    /// The number of the next push without a `seq` (``DeviceFleet/init(threads:numberingFrom:)``).
    var nextNumber: Int?

    init(fd: Int32, numberingFrom: Int? = nil) {
        self.fd = fd
        self.nextNumber = numberingFrom
    }

    /// What one read brought.
    struct Event {
        var opened = false
        var pushes = 0
        /// The server closed the WebSocket: the socket is done.
        var closed = false
        /// Why the device failed (a refused upgrade, or a close frame with its code and reason).
        var failure: String?
    }

    private static let seqMarker = Array(#""seq":"#.utf8)

    /// Takes bytes read from the socket; notes each complete push frame's `seq` in `arrivals`.
    mutating func consume(_ bytes: UnsafeBufferPointer<UInt8>, at arrival: Arrival, into arrivals: inout [Int: [Arrival]]) -> Event {
        if pending.isEmpty {
            return consumeWhole(bytes, at: arrival, into: &arrivals)
        }
        pending += bytes
        let all = pending
        pending = []
        return all.withUnsafeBufferPointer { consumeWhole($0, at: arrival, into: &arrivals) }
    }

    private mutating func consumeWhole(
        _ bytes: UnsafeBufferPointer<UInt8>, at arrival: Arrival, into arrivals: inout [Int: [Arrival]]
    ) -> Event {
        var offset = 0
        var event = Event()
        if !isOpen {
            guard let end = BenchSocket.endOfHTTPHead(bytes) else {
                pending = Array(bytes)
                return event
            }
            let head = String(decoding: UnsafeBufferPointer(rebasing: bytes[..<end]), as: UTF8.self)
            guard head.hasPrefix("HTTP/1.1 101") else {
                event.failure = String(head.prefix(200))
                event.closed = true
                return event
            }
            isOpen = true
            event.opened = true
            offset = end
        }
        while let frame = Self.frame(in: bytes, at: offset) {
            let payload = UnsafeBufferPointer(rebasing: bytes[frame.payload])
            switch frame.opcode {
            case 0x1:
                if let seq = Self.seq(in: payload) {
                    arrivals[seq, default: []].append(arrival)
                    event.pushes += 1
                } else if let number = nextNumber {
                    nextNumber = number + 1
                    arrivals[number, default: []].append(arrival)
                    event.pushes += 1
                }
            case 0x9:
                _ = Self.pong(payload).withUnsafeBufferPointer { cbench_send(fd, $0.baseAddress, $0.count) }
            case 0x8:
                // A close frame: code (2 bytes) and reason, e.g. a refused token's 1008.
                let code = payload.count >= 2 ? Int(payload[0]) << 8 | Int(payload[1]) : 1005
                let reason = String(decoding: payload.dropFirst(2), as: UTF8.self)
                event.failure = "the server closed the WebSocket (\(code)) \(reason)"
                event.closed = true
                return event
            default:
                break
            }
            offset = frame.payload.upperBound
        }
        if offset < bytes.count { pending = Array(bytes[offset...]) }
        return event
    }

    /// The frame starting at `offset`, if complete (server frames are unmasked and, from
    /// Nimbus, never fragmented).
    private static func frame(in bytes: UnsafeBufferPointer<UInt8>, at offset: Int) -> (opcode: UInt8, payload: Range<Int>)? {
        guard bytes.count - offset >= 2 else { return nil }
        var header = 2
        var length = Int(bytes[offset + 1] & 0x7F)
        if length == 126 {
            guard bytes.count - offset >= 4 else { return nil }
            length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            header = 4
        } else if length == 127 {
            guard bytes.count - offset >= 10 else { return nil }
            length = (0..<8).reduce(0) { $0 << 8 | Int(bytes[offset + 2 + $1]) }
            header = 10
        }
        guard bytes.count - offset - header >= length else { return nil }
        return (bytes[offset] & 0x0F, (offset + header)..<(offset + header + length))
    }

    /// The number after `"seq":` (the push's `af` carries the record's `seq`).
    private static func seq(in payload: UnsafeBufferPointer<UInt8>) -> Int? {
        let marker = seqMarker
        guard payload.count > marker.count else { return nil }
        var start = 0
        while start + marker.count < payload.count {
            if payload[start] == marker[0], (1..<marker.count).allSatisfy({ payload[start + $0] == marker[$0] }) { break }
            start += 1
        }
        var seq = 0
        var index = start + marker.count
        while index < payload.count, payload[index] &- UInt8(ascii: "0") < 10 {
            seq = seq * 10 + Int(payload[index] &- UInt8(ascii: "0"))
            index += 1
        }
        return index > start + marker.count ? seq : nil
    }

    /// A pong answering a ping (RFC 6455 §5.3: a client's frames are masked).
    private static func pong(_ payload: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        let body = payload.prefix(125)
        return [0x8A, 0x80 | UInt8(body.count)] + mask + body.enumerated().map { $0.element ^ mask[$0.offset % 4] }
    }
}
#endif
