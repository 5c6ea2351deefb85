import Foundation
import Logging
import NimbusStore
import PostgresNIO

/// Where a store's watch over the account tables stands (``PostgresStore/lookUpTokens(apiToken:webAuthToken:)``).
enum AccountWatch: Sendable, Equatable {
    /// Not started: no lookup was made yet. No answer is kept.
    case off
    /// Connecting, or reconnecting after the connection dropped. No answer is kept.
    case connecting
    /// LISTENing: answers are kept, and every change announced ends the answers it touches.
    case listening
}

/// What the account watch did, for whoever waits on it (tests, through
/// ``PostgresStore/accountWatchEvents()``).
enum AccountWatchEvent: Sendable, Equatable {
    /// The LISTEN is in place: changes committed from now on are heard.
    case listening
    /// A change was announced, and the answers it touches were ended.
    case heard(String)
}

extension PostgresStore {
    /// Schema 16: every change to a row a token lookup reads is announced on
    /// ``accountsChannel`` when it commits, whoever made it (any node, `nimbus` commands, SQL
    /// typed by hand). A session's update or deletion names the session (`session <id>`: a
    /// "last seen" write ends that session's answers only); one of an API token, a user or a
    /// user's identity says `*` (end every answer). Inserts are not announced: only complete
    /// answers are kept, and no insert makes one wrong. Re-runnable.
    static let accountTriggersMigration = Migration(
        version: 16,
        statements: [
            """
            CREATE OR REPLACE FUNCTION nimbus_session_changed() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM pg_notify(TG_ARGV[0], 'session ' || OLD.id);
                RETURN NULL;
            END
            $$
            """,
            """
            CREATE OR REPLACE FUNCTION nimbus_account_changed() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM pg_notify(TG_ARGV[0], '*');
                RETURN NULL;
            END
            $$
            """,
        ],
        step: { store, transaction in
            // The channel is the schema's; schema names are letters, digits and `_` only
            // (`validate(schema:)`), so it is safe between quotes.
            let channel = store.accountsChannel
            let triggers = [("sessions", "nimbus_session_changed")]
                + ["tokens", "users", "user_identities"].map { ($0, "nimbus_account_changed") }
            for (table, function) in triggers {
                try await transaction.rows(PostgresQuery(unsafeSQL: "DROP TRIGGER IF EXISTS \(table)_changed ON \(table)"))
                try await transaction.rows(
                    PostgresQuery(
                        unsafeSQL: """
                            CREATE TRIGGER \(table)_changed AFTER UPDATE OR DELETE ON \(table)
                            FOR EACH ROW EXECUTE FUNCTION \(function)('\(channel)')
                            """))
            }
        })

    /// Both lookups of a request in one statement (every API request makes them), and none
    /// while the answer is fresh in ``tokenLookups``.
    ///
    /// Answers are kept only while this store LISTENs on ``accountsChannel`` (the first
    /// lookup starts it; until the LISTEN is in place, and after its connection drops until it
    /// is back, every lookup reads). The account tables' triggers announce each change when it
    /// commits, so a token or session revoked on another node, or by a `nimbus` command, ends
    /// the answers here within the notification's delivery; one made through this store ends
    /// them before its method returns. Every answer also expires
    /// ``TokenLookupCache/lifetimeMillis`` after it was read.
    public func lookUpTokens(apiToken: String, webAuthToken: String?) async throws -> TokenLookup {
        // The generation before the watch's state: a LISTEN that drops after this moment ends
        // every answer (a new generation) after it leaves `.listening`, so an answer read
        // while it was down is refused either way.
        let generation = tokenLookups.generation
        let watching = watchAccounts()
        if watching, let cached = tokenLookups.lookup(apiToken: apiToken, webAuthToken: webAuthToken, now: clock.nowMillis()) {
            return cached
        }
        let found = try await readTokens(apiToken: apiToken, webAuthToken: webAuthToken)
        if watching {
            let rows = found.session.map { [TokenLookupCache.Row(table: "sessions", key: $0.id)] } ?? []
            tokenLookups.store(
                found, rows: rows, apiToken: apiToken, webAuthToken: webAuthToken, generation: generation,
                now: clock.nowMillis())
        }
        return found
    }

    private func readTokens(apiToken: String, webAuthToken: String?) async throws -> TokenLookup {
        guard
            let row = try await rows(
                Prepared<Statements.TokenLookup>([apiToken, webAuthToken.map(SessionToken.hash)])
            ).first
        else { return TokenLookup(container: nil, user: nil) }
        var columns = ColumnReader(row)
        let container = try columns.next(String?.self)
        let userContainer = try columns.next(String?.self)
        let sessionID = try columns.next(String?.self)
        let lastSeenAt = try columns.next(Int64?.self)
        guard let userContainer, let sessionID, let lastSeenAt,
            let user = try columns.optionalIdentity(container: userContainer)
        else { return TokenLookup(container: container, user: nil) }
        return TokenLookup(container: container, user: user, session: SessionStamp(id: sessionID, lastSeenAt: lastSeenAt))
    }

    /// Ends the answers a change through this store touched (a session's, or every one),
    /// once it committed: the next lookup on this node reads, without waiting for the
    /// announcement.
    func accountsChanged(session id: String? = nil) {
        if let id {
            tokenLookups.invalidate(rows: [TokenLookupCache.Row(table: "sessions", key: id)])
        } else {
            tokenLookups.invalidateAll()
        }
    }

    /// Whether answers may be kept now; starts the watch on first use.
    private func watchAccounts() -> Bool {
        switch accountWatch {
        case .listening: return true
        case .connecting: return false
        case .off:
            if moveAccountWatch(from: .off, to: .connecting) { startAccountWatch() }
            return false
        }
    }

    private func startAccountWatch() {
        let id = UUID()
        let task = Task {
            await self.listenForAccountChanges()
            self.finishAccountWatchEvents()
            self.unregister(listener: id)
        }
        if !register(listener: id, task) { task.cancel() }
    }

    /// LISTENs on ``accountsChannel`` until cancelled, reconnecting after a failure; while
    /// not listening, keeps no answer.
    private func listenForAccountChanges() async {
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: self.accountsChannel) { changes in
                        if self.moveAccountWatch(from: .connecting, to: .listening) { self.emit(.listening) }
                        for try await change in changes { self.heard(change.payload) }
                    }
                }
            } catch {
                if !Task.isCancelled {
                    logger.warning(
                        "postgres LISTEN for account changes failed; reconnecting",
                        metadata: ["channel": "\(accountsChannel)", "error": "\(error)"])
                }
            }
            // Changes may go unheard from here until the LISTEN is back: keep nothing. In this
            // order (see `lookUpTokens`): leave `.listening`, then end every answer.
            _ = moveAccountWatch(from: .listening, to: .connecting)
            tokenLookups.invalidateAll()
            if Task.isCancelled { break }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// Ends the answers an announced change touches; anything but a session's id ends all.
    private func heard(_ payload: String) {
        let prefix = "session "
        if payload.hasPrefix(prefix) {
            accountsChanged(session: String(payload.dropFirst(prefix.count)))
        } else {
            accountsChanged()
        }
        emit(.heard(payload))
    }
}
