import Foundation
import NIOSSL
import NimbusStore
import PostgresNIO

/// Parses `postgres://` connection URLs into the driver's configuration.
enum PostgresURL {
    /// `postgres://user:password@host:port/database?sslmode=…&host=/socket/dir`.
    static func configuration(from url: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url), let scheme = components.scheme,
            scheme == "postgres" || scheme == "postgresql"
        else {
            throw PostgresStoreError(
                .invalidURL, "'\(redacted(url))' is not a PostgreSQL URL (postgres://user@host:port/database)")
        }
        let query = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        let user = components.percentEncodedUser.flatMap { $0.removingPercentEncoding } ?? "postgres"
        let password = components.percentEncodedPassword.flatMap { $0.removingPercentEncoding }
        let path = components.percentEncodedPath.removingPercentEncoding ?? ""
        let database = path.hasPrefix("/") && path.count > 1 ? String(path.dropFirst()) : user

        let tls: PostgresClient.Configuration.TLS
        switch query["sslmode"] ?? "prefer" {
        case "disable": tls = .disable
        case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
        case let other:
            throw PostgresStoreError(
                .invalidURL, "sslmode=\(other) is not supported; use disable, prefer or require")
        }
        for name in query.keys where !["sslmode", "host"].contains(name) {
            throw PostgresStoreError(.invalidURL, "the URL option '\(name)' is not supported (only sslmode and host)")
        }
        if let socketDirectory = query["host"], socketDirectory.hasPrefix("/") {
            let port = components.port ?? 5432
            return PostgresClient.Configuration(
                unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: user, password: password,
                database: database)
        }
        let host = components.host.flatMap { $0.isEmpty ? nil : $0 } ?? "localhost"
        return PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: user, password: password, database: database,
            tls: tls)
    }

    /// The URL without its password, for messages and logs.
    static func redacted(_ url: String) -> String {
        StorageLocation.redacted(url)
    }
}

extension PostgresStore {
    /// `url` with its password, if any, replaced by `***`: what logs and banners may show.
    public static func redactedURL(_ url: String) -> String {
        PostgresURL.redacted(url)
    }
}
