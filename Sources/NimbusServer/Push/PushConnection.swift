import NIOConcurrencyHelpers
import NIOCore
import NimbusStore

/// One push frame: a notification's payload, encoded once and shared by every connection
/// it goes to.
struct PushFrame: Sendable {
    /// The recipient's sequence number of the notification (0 for a catch-up push).
    var sequence: Int64
    var payload: ByteBuffer
}

/// A connected device: whose it is, its bounded outbox, and what has been written to it.
///
/// The hub puts frames in the outbox without waiting (``enqueue(_:)``); the connection's
/// session task writes them to the socket. An outbox that fills up (the device does not
/// read fast enough) closes the connection rather than grow or block anyone: the device
/// reconnects and gets one coalesced push for what it missed.
final class PushConnection: Sendable {
    let recipient: NotificationRecipient
    let deviceID: String
    let channel: any Channel
    /// The frames to write, in order; finished when the connection ends.
    let frames: AsyncStream<PushFrame>
    private let continuation: AsyncStream<PushFrame>.Continuation
    private let state = NIOLockedValueBox(State())

    private struct State {
        /// Every notification up to here was written to the socket, or was the device's own.
        var deliveredThrough: Int64 = 0
        /// When the socket was first seen not accepting writes, by the sweeper.
        var unwritableSince: ContinuousClock.Instant?
        var closed = false
    }

    init(recipient: NotificationRecipient, deviceID: String, channel: any Channel, bufferLimit: Int) {
        self.recipient = recipient
        self.deviceID = deviceID
        self.channel = channel
        (frames, continuation) = AsyncStream.makeStream(of: PushFrame.self, bufferingPolicy: .bufferingOldest(bufferLimit))
    }

    /// Queues a frame; never waits. Closes the connection when the outbox is full.
    func enqueue(_ frame: PushFrame) {
        switch continuation.yield(frame) {
        case .enqueued, .terminated: return
        case .dropped: close()
        @unknown default: close()
        }
    }

    /// Records a notification the device needs no push for (its own change).
    func skip(through sequence: Int64) {
        state.withLockedValue { $0.deliveredThrough = max($0.deliveredThrough, sequence) }
    }

    /// Records a frame written to the socket.
    func written(_ frame: PushFrame) {
        skip(through: frame.sequence)
    }

    var deliveredThrough: Int64 { state.withLockedValue { $0.deliveredThrough } }

    /// Ends the outbox and closes the socket.
    func close() {
        let first = state.withLockedValue { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        continuation.finish()
        channel.close(promise: nil)
    }

    /// Ends the outbox (the session writes nothing more).
    func finish() {
        continuation.finish()
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
