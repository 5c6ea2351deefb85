import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket
import NimbusStore

/// One push frame: a notification's payload as a complete WebSocket text frame, encoded
/// once and shared by every connection it goes to.
struct PushFrame: Sendable {
    /// The recipient's sequence number of the notification (0 for a catch-up push).
    var sequence: Int64
    /// The frame as it goes on the wire: header (FIN, text, unmasked as a server's frames
    /// are, RFC 6455 §5.1) and payload in one buffer.
    var wire: ByteBuffer

    init(sequence: Int64, payload: String) {
        self.sequence = sequence
        let length = payload.utf8.count
        var wire = ByteBuffer()
        wire.reserveCapacity(length + 10)
        wire.writeInteger(UInt8(0x81))  // FIN | text
        switch length {
        case ..<126:
            wire.writeInteger(UInt8(length))
        case ..<65_536:
            wire.writeInteger(UInt8(126))
            wire.writeInteger(UInt16(length))
        default:
            wire.writeInteger(UInt8(127))
            wire.writeInteger(UInt64(length))
        }
        wire.writeString(payload)
        self.wire = wire
    }
}

/// A connected device: whose it is, and the frames on their way to its socket.
///
/// The hub hands frames to ``enqueue(_:into:)`` (others to ``enqueue(_:)``), which never
/// waits: each frame goes to the channel's event loop to be written (in order) and is
/// counted until the write completes. No task per connection is involved. A connection with ``bufferLimit`` frames still
/// unwritten (its device does not read fast enough, or not at all) is closed rather than
/// grow or hold anyone up: the device reconnects and gets one coalesced push for what it
/// missed. Frames that arrive while the WebSocket upgrade is still completing wait until
/// ``open(below:)``.
final class PushConnection: Sendable {
    let recipient: NotificationRecipient
    let deviceID: String
    let channel: any Channel
    let bufferLimit: Int
    private let state = NIOLockedValueBox(State())
    /// Where pushes enter the pipeline: below the WebSocket frame encoder, since they are
    /// encoded already (set by ``open(below:)``, used on the channel's loop only).
    private let writer = NIOLockedValueBox<NIOLoopBound<ChannelHandlerContext>?>(nil)

    private struct State {
        var phase = Phase.opening([])
        /// Frames handed to the channel whose write has not completed.
        var inFlight = 0
        /// Every notification up to here was written to the socket, or was the device's own.
        var deliveredThrough: Int64 = 0
        /// When the socket was first seen not accepting writes, by the sweeper.
        var unwritableSince: ContinuousClock.Instant?
        /// When the last heartbeat ping was sent (or the connection opened).
        var lastPing: ContinuousClock.Instant?
        /// The last ping has not been answered.
        var awaitingPong = false
    }

    private enum Phase {
        /// The upgrade is completing; frames wait here.
        case opening([PushFrame])
        case open
        case closed
    }

    /// The session the device authenticated with: revoking it closes the connection.
    let sessionID: String?

    /// Monotonic time, for the first heartbeat's start (``PushSettings/now``).
    private let now: @Sendable () -> ContinuousClock.Instant

    init(
        recipient: NotificationRecipient, deviceID: String, channel: any Channel, bufferLimit: Int,
        sessionID: String? = nil, now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) {
        self.now = now
        self.recipient = recipient
        self.deviceID = deviceID
        self.sessionID = sessionID
        self.channel = channel
        self.bufferLimit = bufferLimit
    }

    /// Frames queued for the socket and not yet written (waiting for the upgrade, or handed
    /// to the event loop).
    var queuedFrames: Int {
        state.withLockedValue { state in
            switch state.phase {
            case .opening(let frames): frames.count
            case .open: state.inFlight
            case .closed: 0
            }
        }
    }

    /// Queues a frame for the socket; never waits. Closes the connection when it is full.
    func enqueue(_ frame: PushFrame) {
        // Scheduled while holding the lock, so frames reach the loop in enqueue order.
        admit(frame) { write($0) }
    }

    /// Queues a frame as part of a fan-out: its write joins `batch`, which hands each event
    /// loop its writes a few connections at a time (the hub flushes the rest when the
    /// delivery ends, so a connection's frames still reach its loop in delivery order).
    func enqueue(_ frame: PushFrame, into batch: inout PushWriteBatch) {
        admit(frame) { batch.add(self, $0) }
    }

    /// Counts a frame in, or keeps it until ``open(below:)``, or closes a full connection;
    /// `schedule` runs under the lock for a frame to write now.
    private func admit(_ frame: PushFrame, schedule: (PushFrame) -> Void) {
        let overflow = state.withLockedValue { state -> Bool in
            switch state.phase {
            case .closed:
                return false
            case .opening(var frames):
                state.phase = .closed  // releases the array, so appending does not copy it
                guard frames.count < bufferLimit else {
                    state.phase = .closed
                    return true
                }
                frames.append(frame)
                state.phase = .opening(frames)
                return false
            case .open:
                guard state.inFlight < bufferLimit else {
                    state.phase = .closed
                    return true
                }
                state.inFlight += 1
                schedule(frame)
                return false
            }
        }
        if overflow { channel.close(promise: nil) }
    }

    /// The WebSocket is ready: writes the frames that waited for it, and the rest as they come.
    /// `encoder` is the context of the channel's `WebSocketFrameEncoder`; on the channel's loop.
    func open(below encoder: ChannelHandlerContext) {
        writer.withLockedValue { $0 = NIOLoopBound(encoder, eventLoop: encoder.eventLoop) }
        state.withLockedValue { state in
            guard case .opening(let frames) = state.phase else { return }
            state.phase = .open
            state.lastPing = now()
            state.inFlight += frames.count
            for frame in frames { write(frame) }
        }
    }

    /// Schedules the write on the channel's loop (never inline, so no callback runs under the lock).
    private func write(_ frame: PushFrame) {
        channel.eventLoop.execute { self.writeOnLoop(frame) }
    }

    /// Writes a frame; on the channel's event loop.
    fileprivate func writeOnLoop(_ frame: PushFrame) {
        let promise = channel.eventLoop.makePromise(of: Void.self)
        promise.futureResult.whenComplete { result in
            self.state.withLockedValue { state in
                state.inFlight -= 1
                if case .success = result { state.deliveredThrough = max(state.deliveredThrough, frame.sequence) }
            }
        }
        // The frame is encoded already: it enters the pipeline below the frame encoder,
        // one buffer shared by every device, no per-device header or frame value.
        guard let encoder = writer.withLockedValue({ $0 })?.value else {
            promise.fail(ChannelError.ioOnClosedChannel)
            return
        }
        encoder.writeAndFlush(NIOAny(frame.wire), promise: promise)
    }

    /// The heartbeat, from the sweeper: pings the device every `interval`, and closes the
    /// connection when the previous ping is still unanswered.
    func heartbeat(now: ContinuousClock.Instant, interval: Duration) {
        enum Action { case none, ping, close }
        let action = state.withLockedValue { state -> Action in
            guard case .open = state.phase, let last = state.lastPing, now - last >= interval else { return .none }
            guard !state.awaitingPong else {
                state.phase = .closed
                return .close
            }
            state.awaitingPong = true
            state.lastPing = now
            return .ping
        }
        switch action {
        case .none: break
        case .ping: channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer()), promise: nil)
        case .close: channel.close(promise: nil)
        }
    }

    /// The device answered the heartbeat.
    func pongReceived() {
        state.withLockedValue { $0.awaitingPong = false }
    }

    /// Closes the connection with close code 1001 (going away): the server is stopping.
    func closeGoingAway() {
        closeSending(.goingAway, reason: nil)
    }

    /// Closes the connection with close code 1008 (policy violation): its session was
    /// revoked or expired.
    func closeSessionEnded() {
        closeSending(.policyViolation, reason: "AUTHENTICATION_FAILED: the session was revoked or expired; sign in again")
    }

    private func closeSending(_ code: WebSocketErrorCode, reason: String?) {
        let first = state.withLockedValue { state -> Bool in
            if case .closed = state.phase { return false }
            state.phase = .closed
            return true
        }
        guard first else { return }
        let channel = channel
        var data = ByteBuffer()
        data.write(webSocketErrorCode: code)
        if let reason { data.writeString(reason) }
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, data: data))
            .whenComplete { _ in channel.close(promise: nil) }
    }

    /// Records a notification the device needs no push for (its own change).
    func skip(through sequence: Int64) {
        state.withLockedValue { $0.deliveredThrough = max($0.deliveredThrough, sequence) }
    }

    var deliveredThrough: Int64 { state.withLockedValue { $0.deliveredThrough } }

    /// Stops writing and closes the socket.
    func close() {
        let first = state.withLockedValue { state -> Bool in
            if case .closed = state.phase { return false }
            state.phase = .closed
            return true
        }
        if first { channel.close(promise: nil) }
    }

    /// The connection ended: nothing more is written.
    func finish() {
        state.withLockedValue { $0.phase = .closed }
    }

    /// Closes the connection if its socket has accepted nothing for `timeout`.
    func checkStalled(now: ContinuousClock.Instant, timeout: Duration) {
        let writable = channel.isWritable
        let stalled = state.withLockedValue { state -> Bool in
            guard !writable else {
                state.unwritableSince = nil
                return false
            }
            guard let since = state.unwritableSince else {
                state.unwritableSince = now
                return false
            }
            return now - since >= timeout
        }
        if stalled { close() }
    }
}

/// The writes of one fan-out, grouped by event loop and handed to each loop a few at a time:
/// one task per `chunk` devices instead of one per device, and the first writes start
/// before the whole fan-out has been queued.
struct PushWriteBatch {
    static let chunk = 16
    private var loops: [ObjectIdentifier: (loop: any EventLoop, writes: [(PushConnection, PushFrame)])] = [:]

    mutating func add(_ connection: PushConnection, _ frame: PushFrame) {
        let loop = connection.channel.eventLoop
        let key = ObjectIdentifier(loop)
        loops[key, default: (loop, [])].writes.append((connection, frame))
        if let pending = loops[key], pending.writes.count >= Self.chunk {
            loops[key]?.writes = []
            Self.hand(pending.writes, to: loop)
        }
    }

    /// Hands each event loop the writes still pending, in the order they were added.
    mutating func flush() {
        for (loop, writes) in loops.values where !writes.isEmpty { Self.hand(writes, to: loop) }
        loops = [:]
    }

    private static func hand(_ writes: [(PushConnection, PushFrame)], to loop: any EventLoop) {
        loop.execute {
            for (connection, frame) in writes { connection.writeOnLoop(frame) }
        }
    }
}
