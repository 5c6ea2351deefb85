import NIOCore
import NimbusStore
import PostgresNIO

extension PostgresStore {
    /// The name of the secret that signs sync tokens.
    static let changeTokenSecretName = "change-tokens"

    /// The secret every node signs sync tokens with: the one in the database, or `candidate`
    /// stored now when there is none. Nodes starting together each offer their candidate;
    /// the first insert wins and every node reads the winner.
    func changeTokenSecret(candidate: [UInt8]) async throws -> [UInt8] {
        try await rows(
            """
            INSERT INTO server_secrets (name, secret, created_at)
            VALUES (\(Self.changeTokenSecretName), \(ByteBuffer(bytes: candidate)), \(clock.nowMillis()))
            ON CONFLICT (name) DO NOTHING
            """)
        let stored = try await rows(
            "SELECT secret FROM server_secrets WHERE name = \(Self.changeTokenSecretName)"
        ).first.map { try $0.decode(ByteBuffer.self) }
        guard let stored, stored.readableBytes == ChangeTokens.secretByteCount else {
            throw PostgresStoreError(
                .corruptRow,
                "the server secret '\(Self.changeTokenSecretName)' is missing or not \(ChangeTokens.secretByteCount) bytes")
        }
        return Array(stored.readableBytesView)
    }
}
