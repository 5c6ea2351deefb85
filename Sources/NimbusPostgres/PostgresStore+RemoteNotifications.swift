import Foundation
import Logging
import NIOConcurrencyHelpers
import NimbusStore
import PostgresNIO

extension PostgresStore {
    /// Notifications committed through other nodes, in commit order, from PostgreSQL's
    /// LISTEN/NOTIFY: no broker besides the database.
    ///
    /// Each call opens its own LISTEN connection (from the pool) on this schema's channel.
    /// A commit made through this instance is skipped (its message names this ``nodeID``);
    /// each other commit yields its notifications exactly as that node's
    /// `CommitSummary.notifications` has them. If the connection drops, the listener
    /// reconnects; commits announced meanwhile are not repeated (devices recover them from
    /// the notification collection when they reconnect). The stream finishes on
    /// ``shutdown()``.
    public func remoteNotifications() -> AsyncStream<[StoredNotification]> {
        startListening(onListening: nil)
    }

    /// ``remoteNotifications()``, returning once the LISTEN is in place (or the store is
    /// closed), so that a caller knows every commit from then on reaches the stream.
    func remoteNotificationsWhenListening() async -> AsyncStream<[StoredNotification]> {
        let ready = ReadySignal()
        let stream = startListening(onListening: { ready.fire() })
        await ready.wait()
        return stream
    }

    /// The channel name of a schema: `nimbus_<schema>`, shortened with a hash when that would
    /// pass PostgreSQL's 63-byte identifier limit.
    static func channelName(schema: String) -> String {
        let name = "nimbus_" + schema
        guard name.utf8.count > 63 else { return name }
        return "nimbus_" + String(schema.prefix(38)) + "_" + String(schemaHash(schema), radix: 16)
    }

    /// The channel the account tables' triggers use: `nimbus_accounts_<schema>`, shortened
    /// the same way.
    static func accountsChannelName(schema: String) -> String {
        let name = "nimbus_accounts_" + schema
        guard name.utf8.count > 63 else { return name }
        return "nimbus_accounts_" + String(schema.prefix(29)) + "_" + String(schemaHash(schema), radix: 16)
    }

    /// FNV-1a of the schema's name: what tells long names apart once shortened.
    private static func schemaHash(_ schema: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in schema.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    private func startListening(onListening: (@Sendable () -> Void)?) -> AsyncStream<[StoredNotification]> {
        let (stream, continuation) = AsyncStream.makeStream(of: [StoredNotification].self)
        let id = UUID()
        let task = Task {
            await self.listen(continuation, onListening: onListening)
            onListening?()
            continuation.finish()
            self.unregister(listener: id)
        }
        continuation.onTermination = { _ in task.cancel() }
        if !register(listener: id, task) {
            task.cancel()
        }
        return stream
    }

    /// LISTENs until cancelled, reconnecting after a failure.
    private func listen(
        _ continuation: AsyncStream<[StoredNotification]>.Continuation, onListening: (@Sendable () -> Void)?
    ) async {
        var assembler = CommitAssembler()
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: self.channel) { notifications in
                        onListening?()
                        for try await notification in notifications {
                            guard let message = RemoteNotificationMessage.decode(notification.payload),
                                message.node != self.nodeID, let parts = assembler.add(message)
                            else { continue }
                            let resolved = try await self.resolve(parts)
                            if !resolved.isEmpty { continuation.yield(resolved) }
                        }
                    }
                }
            } catch {
                if Task.isCancelled { break }
                logger.warning(
                    "postgres LISTEN failed; reconnecting", metadata: ["channel": "\(channel)", "error": "\(error)"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// The notifications of one commit's messages: inline ones as sent, referenced ones read
    /// back as they were created.
    func resolve(_ parts: [RemoteNotificationMessage]) async throws -> [StoredNotification] {
        if parts.count == 1, let inline = parts[0].notifications { return inline.compactMap(\.notification) }
        let references = parts.flatMap { $0.references ?? [] }
        guard !references.isEmpty else { return [] }
        return try await rows(
            """
            SELECT \(unescaped: Self.notificationColumnsN)
            FROM unnest(
                \(references.map(\.container))::text[], \(references.map(\.environment))::text[],
                \(references.map(\.recipient))::text[], \(references.map(\.first))::int8[],
                \(references.map(\.last))::int8[]) WITH ORDINALITY AS r(container, environment, recipient, first, last, ord)
            JOIN notifications n ON n.container = r.container AND n.environment = r.environment
                AND n.recipient = r.recipient AND n.created_seq BETWEEN r.first AND r.last
            ORDER BY r.ord, n.created_seq
            """
        ).map { row in
            var columns = ColumnReader(row)
            var notification = try columns.notification()
            // As created: a device may have marked it read since.
            notification.sequence = notification.createdSequence
            notification.isRead = false
            return notification
        }
    }
}

/// Puts a commit's message parts back together (they arrive together and in order).
struct CommitAssembler {
    private var commit: UUID?
    private var parts: [RemoteNotificationMessage] = []

    /// The commit's parts once the last one arrived, else `nil`.
    mutating func add(_ message: RemoteNotificationMessage) -> [RemoteNotificationMessage]? {
        if message.commit != commit {
            commit = message.commit
            parts = []
        }
        parts.append(message)
        guard parts.count >= message.parts else { return nil }
        defer {
            commit = nil
            parts = []
        }
        return parts.sorted { $0.part < $1.part }
    }
}

/// A one-shot signal: ``wait()`` returns once ``fire()`` was called, before or after.
final class ReadySignal: Sendable {
    private let state = NIOLockedValueBox<(fired: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    func fire() {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            guard !state.fired else { return nil }
            state.fired = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let firedAlready = state.withLockedValue { state -> Bool in
                if state.fired { return true }
                state.waiter = continuation
                return false
            }
            if firedAlready { continuation.resume() }
        }
    }
}
