// swift-tools-version:6.0
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "nimbus",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10)],
    products: [
        // The server and its operator's command line (Linux and macOS).
        .executable(name: "nimbus", targets: ["NimbusCLI"]),
        // The Reading List demo: `swift run nimbus-demo`.
        .executable(name: "nimbus-demo", targets: ["NimbusDemo"]),
        // The benchmarks: `swift run -c release nimbus-bench …` (push bench on Linux only).
        .executable(name: "nimbus-bench", targets: ["NimbusBench"]),
        .library(name: "NimbusProtocol", targets: ["NimbusProtocol"]),
        .library(name: "NimbusStore", targets: ["NimbusStore"]),
        .library(name: "NimbusSQLite", targets: ["NimbusSQLite"]),
        .library(name: "NimbusPostgres", targets: ["NimbusPostgres"]),
        .library(name: "NimbusEngines", targets: ["NimbusEngines"]),
        .library(name: "NimbusObjectStore", targets: ["NimbusObjectStore"]),
        .library(name: "NimbusMemory", targets: ["NimbusMemory"]),
        .library(name: "NimbusServer", targets: ["NimbusServer"]),
        .library(name: "Nimbus", targets: ["Nimbus"]),
        .library(name: "NimbusSync", targets: ["NimbusSync"]),
        // End-to-end encryption's primitives, composed from swift-crypto (docs/ENCRYPTION.md).
        .library(name: "NimbusCrypto", targets: ["NimbusCrypto"]),
        // CloudKit's own Swift API on a Nimbus server: `import CloudKit` becomes `import NimbusCloudKit`.
        .library(name: "NimbusCloudKit", targets: ["NimbusCloudKit"]),
        // iCloud's key-value store on Nimbus: small values that follow the user (`NSUbiquitousKeyValueStore`'s shape).
        .library(name: "NimbusKeyValue", targets: ["NimbusKeyValue"]),
        // iCloud Drive's synced folder on Nimbus: files and folders as records and assets.
        .library(name: "NimbusDocuments", targets: ["NimbusDocuments"]),
        // `nimbus-drive`: keeps a local folder in sync with a server (NimbusDocuments).
        .executable(name: "nimbus-drive", targets: ["NimbusDrive"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        // ID tokens of identity providers (Sign in with Apple, Google, any OpenID Connect issuer).
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        // The dashboard's server-rendered pages.
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        // One change traced end to end: spans (swift-distributed-tracing) and W3C `traceparent` headers.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-w3c-trace-context.git", from: "1.0.0"),
        // The server's `/metrics`: swift-metrics' API, rendered as Prometheus text.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        // Value model and CloudKit Web Services JSON codec. Foundation only.
        .target(name: "NimbusProtocol", swiftSettings: swiftSettings),
        // End-to-end encryption on the device: zone keys, sealed fields and files, keys
        // wrapped to devices, recovery keys and enrolment by code. swift-crypto only.
        .target(
            name: "NimbusCrypto",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                // scrypt, which stretches an enrolment code.
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // The storage core: the storage seam's protocols, the stored model, and every rule
        // an engine must keep (plans, paging, tokens, errors). No engine, no SQL.
        .target(
            name: "NimbusStore",
            dependencies: [
                "NimbusProtocol",
                // Signing sync tokens (HMAC-SHA256 with the server's secret).
                .product(name: "Crypto", package: "swift-crypto"),
                // Stored values that no longer decode are logged, not thrown.
                .product(name: "Logging", package: "swift-log"),
                // The time a `ManualWallClock` holds, behind a lock.
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // Asset bytes cross the `AssetStore` seam as the HTTP server's `ByteBuffer`s.
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // What the server's SQLite engine and a device's local store share below GRDB: values
        // bound through SQLite's C API (`BoundStatement`), and checkpoints off the commit path
        // (`WALCheckpointer`).
        .target(
            name: "NimbusSQLiteBinding",
            dependencies: [
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                // Locks that exist on every platform the SDK supports (`Mutex` needs iOS 18).
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The embedded SQLite engine: runs the statements the storage core asks for, on GRDB.
        .target(
            name: "NimbusSQLite",
            dependencies: [
                "NimbusStore",
                "NimbusProtocol",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for the statements a modify runs per record (`BoundStatement`).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                "NimbusSQLiteBinding",
            ],
            swiftSettings: swiftSettings
        ),
        // The PostgreSQL engine: the same `NimbusStorage` semantics, shared by several nodes.
        .target(
            name: "NimbusPostgres",
            dependencies: [
                "NimbusStore",
                "NimbusProtocol",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                // Binding arrays with NULL elements; the store's lock-protected state.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // `sslmode=require` in the connection URL.
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        // The in-memory record store: the storage core's rules over dictionaries, for fast tests
        // of those rules and as the smallest example of an engine. No SQL, no I/O.
        .target(
            name: "NimbusMemory",
            dependencies: ["NimbusStore", "NimbusProtocol"],
            swiftSettings: swiftSettings
        ),
        // Asset bytes in an S3-compatible object store (AWS S3, MinIO, R2, Garage…): SigV4
        // composed from swift-crypto, requests by AsyncHTTPClient.
        .target(
            name: "NimbusObjectStore",
            dependencies: [
                "NimbusStore",
                "NimbusProtocol",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The engines Nimbus ships, composed: opens the storage a `StorageLocation` names and
        // starts a server on it. What `nimbus`, the benchmarks and the tests link; the server
        // itself knows only the storage core.
        .target(
            name: "NimbusEngines",
            dependencies: [
                "NimbusStore",
                "NimbusSQLite",
                "NimbusPostgres",
                "NimbusServer",
                // Asset bytes in an S3-compatible bucket (`--assets s3://…`).
                "NimbusObjectStore",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // HTTP API, auth, provisioning, push hub.
        .target(
            name: "NimbusServer",
            dependencies: [
                "NimbusProtocol",
                "NimbusStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                // The push channel: its own HTTP/1 pipeline and WebSocket frames on NIO.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                // Identity tokens: JWT verification against the issuer's JWKS, fetched over HTTPS.
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // Built-in accounts' password hashes.
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                // Hashing passwords off the cooperative pool; the SMTP mail sender's connections.
                .product(name: "NIOPosix", package: "swift-nio"),
                // STARTTLS and TLS to the SMTP server.
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // The server's spans of a traced change, and the `traceparent` they continue.
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "W3CTraceContext", package: "swift-w3c-trace-context"),
                // `/metrics`: counters, gauges and histograms in a per-server Prometheus registry.
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            resources: [.copy("Resources/openapi.yaml")],
            swiftSettings: swiftSettings
        ),
        // The operators' dashboard at `/`: server-rendered pages over the same store, schema and
        // API code as the HTTP API. `nimbus serve` mounts it through `ServerConfiguration.routeExtensions`.
        .target(
            name: "NimbusDashboard",
            dependencies: [
                "NimbusProtocol",
                "NimbusStore",
                "NimbusServer",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Mustache", package: "swift-mustache"),
                // Server-to-server key pairs made from the container page.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                // The live page's event stream ends when the server shuts down.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Client SDK: container, databases, async API and operations, push client, errors, retry.
        .target(
            name: "Nimbus",
            dependencies: [
                "NimbusProtocol",
                // Sealing `encryptedValues` on the device (docs/ENCRYPTION.md).
                "NimbusCrypto",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "WSClient", package: "swift-websocket"),
                // Signing requests with a server-to-server key (ECDSA P-256).
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // The HTTP client's event loops and the push WebSocket's frames.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                // A request's trace travels in the task's `ServiceContext` and leaves as `traceparent`.
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "W3CTraceContext", package: "swift-w3c-trace-context"),
            ],
            swiftSettings: swiftSettings
        ),
        // Sync engine: local cache, persisted outbox, fetch/send scheduling, merge, recovery.
        .target(
            name: "NimbusSync",
            dependencies: [
                "Nimbus",
                "NimbusProtocol",
                .product(name: "GRDB", package: "GRDB.swift"),
                // The store's one write per fetched record (`BoundStatement`).
                "NimbusSQLiteBinding",
                // Locks that exist on every platform the SDK supports (`Mutex` needs iOS 18).
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // iCloud's key-value store: one record per key in a zone of the user's private
        // database, synced by a SyncEngine of its own.
        .target(
            name: "NimbusKeyValue",
            dependencies: [
                "Nimbus", "NimbusProtocol", "NimbusSync",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // A synced folder: documents and folders as records of a zone, bytes as assets, names
        // made portable, conflicts kept as versions; on the sync engine.
        .target(
            name: "NimbusDocuments",
            dependencies: [
                "Nimbus", "NimbusProtocol", "NimbusSync",
                // The library's own tables in the engine's local store.
                .product(name: "GRDB", package: "GRDB.swift"),
                // Contents' SHA-256; the tag of a shortened long name.
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // `nimbus-drive`: one folder synced with a server, progress shown for long transfers.
        .executableTarget(
            name: "NimbusDrive",
            dependencies: [
                "NimbusDocuments", "Nimbus", "NimbusSync",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        // CloudKit's names, shapes and behaviour (CKContainer, CKRecord, operations, CKSyncEngine)
        // over the SDK, so code written for CloudKit runs against Nimbus with one import changed.
        .target(
            name: "NimbusCloudKit",
            dependencies: ["Nimbus", "NimbusProtocol", "NimbusKeyValue"],
            swiftSettings: swiftSettings
        ),
        // The Reading List example: the app model and its commands, on the sync engine.
        .target(
            name: "ReadingList",
            dependencies: [
                "Nimbus",
                "NimbusProtocol",
                "NimbusSync",
                .product(name: "GRDB", package: "GRDB.swift"),
                // The push feed's lock-protected state.
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Examples/ReadingList/Library",
            swiftSettings: swiftSettings
        ),
        // `reading-list`: the example's command line, one device per directory.
        .executableTarget(
            name: "reading-list",
            dependencies: [
                "ReadingList",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/ReadingList/CLI",
            swiftSettings: swiftSettings
        ),
        // The shared photo album example: two users share albums (the sharing sample the seeds asked for).
        .target(
            name: "SharedAlbum",
            dependencies: ["Nimbus", "NimbusProtocol", "NimbusSync"],
            path: "Examples/SharedAlbum/Library",
            swiftSettings: swiftSettings
        ),
        // `shared-album`: the album's command line, one device per directory.
        .executableTarget(
            name: "shared-album",
            dependencies: [
                "SharedAlbum", "Nimbus", "NimbusSync",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/SharedAlbum/CLI",
            swiftSettings: swiftSettings
        ),
        // An embedded server and Reading List devices: what `nimbus demo` and `nimbus-bench sync` run on.
        .target(
            name: "ReadingListSandbox",
            dependencies: [
                "NimbusEngines", "NimbusSQLite",
                "ReadingList",
                "NimbusServer",
                "NimbusStore",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/ReadingList/Sandbox",
            swiftSettings: swiftSettings
        ),
        // The `nimbus` command: the server and its operator's tools (serve, provisioning,
        // schema, traces). Nothing Linux-only; no client SDK, sync engine or example.
        .executableTarget(
            name: "NimbusCLI",
            dependencies: [
                "NimbusEngines", "NimbusSQLite",
                "NimbusProtocol",
                "NimbusStore",
                "NimbusServer",
                "NimbusDashboard",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // `nimbus-demo`: the Reading List scenario live, two devices of one user through an
        // embedded server, each step timed.
        .executableTarget(
            name: "NimbusDemo",
            dependencies: [
                "NimbusEngines", "NimbusSQLite",
                "NimbusProtocol",
                "NimbusServer",
                "Nimbus",
                "NimbusSync",
                "ReadingList",
                "ReadingListSandbox",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // The demo's feeds, shared between its devices' tasks.
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Examples/ReadingList/Demo",
            swiftSettings: swiftSettings
        ),
        // `nimbus-bench push`'s raw sockets: epoll and the kernel's receive timestamps (Linux only).
        .target(name: "CBenchSockets"),
        // `nimbus-bench`: write, feed, sync, query and push benchmarks over HTTP.
        .executableTarget(
            name: "NimbusBench",
            dependencies: [
                "NimbusEngines", "NimbusSQLite",
                // `nimbus-bench growth` reads PostgreSQL's bytes on disk.
                "NimbusPostgres",
                .target(name: "CBenchSockets", condition: .when(platforms: [.linux])),
                "NimbusProtocol",
                "NimbusStore",
                "NimbusServer",
                "Nimbus",
                "NimbusSync",
                // `nimbus-bench sync --engine cloudkit`: a new device on CKSyncEngine, its app's table in SQLite.
                "NimbusCloudKit",
                .product(name: "GRDB", package: "GRDB.swift"),
                // The documents bench's synced folders and key-value stores.
                "NimbusDocuments",
                "NimbusKeyValue",
                "ReadingList",
                "ReadingListSandbox",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                // The benches' HTTP requests and buffers.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // The fairness bench's quiet client on an event loop of its own.
                .product(name: "NIOPosix", package: "swift-nio"),
                // The asset bench checks downloads against the file's SHA-256.
                .product(name: "Crypto", package: "swift-crypto"),
                // The encryption bench's primitives line (a version 2 chunk sealed alone).
                "NimbusCrypto",
            ],
            swiftSettings: swiftSettings
        ),
        // What the test suites share (not a product): the `Engine` enum the suites run on and
        // `ServerHarness`, a real server on fresh storage that always stops and cleans up.
        .target(
            name: "NimbusTestSupport",
            dependencies: [
                "NimbusEngines", "NimbusMemory", "NimbusPostgres", "NimbusServer", "NimbusStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Tests/NimbusTestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "NimbusTests",
            dependencies: [
                "NimbusTestSupport",
                "NimbusEngines", "NimbusSQLite",
                "Nimbus",
                "NimbusCrypto",
                "NimbusProtocol",
                "NimbusStore",
                "NimbusServer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                // ID tokens signed by a test issuer; a browser on the sign-in page that does not follow redirects.
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "NimbusSyncTests",
            dependencies: [
                "NimbusTestSupport",
                "NimbusEngines", "NimbusSQLite",
                "NimbusSync", "NimbusKeyValue", "Nimbus", "NimbusProtocol", "NimbusServer", "NimbusStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // The plaintext-absence tests read every PostgreSQL table's rows as text.
                "NimbusPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // A local store's rows set as an earlier build left them.
                .product(name: "GRDB", package: "GRDB.swift"),
                // The store's checkpoints (`WALCheckpointer`), on a pool of the test's own.
                "NimbusSQLiteBinding",
            ],
            swiftSettings: swiftSettings
        ),
        // NimbusDocuments: the names core alone, and devices syncing folders through a real server.
        .testTarget(
            name: "NimbusDocumentsTests",
            dependencies: [
                "NimbusTestSupport",
                "NimbusEngines", "NimbusSQLite",
                "NimbusDocuments", "NimbusSync", "Nimbus", "NimbusProtocol", "NimbusServer", "NimbusStore",
                // The counting asset transport's lock-protected counts.
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The benches' own parts (the feed client's page scanner, the push bench's devices).
        .testTarget(
            name: "NimbusBenchTests",
            dependencies: [
                "NimbusTestSupport",
                "NimbusEngines", "NimbusSQLite",
                "NimbusBench",
                "NimbusServer",
                "NimbusStore",
                "NimbusProtocol",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // NimbusCloudKit against a real server: CloudKit's API, callbacks, errors and archives.
        .testTarget(
            name: "NimbusCloudKitTests",
            dependencies: [
                "NimbusTestSupport",
                "NimbusEngines", "NimbusSQLite",
                "NimbusCloudKit", "NimbusKeyValue", "Nimbus", "NimbusProtocol", "NimbusServer", "NimbusStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "NimbusCryptoTests",
            dependencies: [
                "NimbusCrypto", "NimbusProtocol", .product(name: "Crypto", package: "swift-crypto"),
                // The version 3 asset format's chunk tags (AES-GCM-SIV), recomputed by the tests.
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "NimbusProtocolTests",
            dependencies: ["NimbusProtocol"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ReadingListTests",
            dependencies: [
                "NimbusTestSupport",
                "NimbusEngines", "NimbusSQLite",
                "ReadingList", "NimbusSync", "Nimbus", "NimbusProtocol", "NimbusServer", "NimbusStore",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Two users, three devices, a real server: the shared album end to end.
        .testTarget(
            name: "SharedAlbumTests",
            dependencies: [
                "NimbusTestSupport",
                "NimbusEngines", "NimbusSQLite",
                "SharedAlbum", "NimbusSync", "Nimbus", "NimbusProtocol", "NimbusServer", "NimbusStore",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "NimbusStoreTests",
            dependencies: [
                "NimbusTestSupport",
                "NimbusMemory",
                "NimbusEngines", "NimbusSQLite",
                "NimbusProtocol", "NimbusStore",
                // The store's behaviour tests run on both engines.
                "NimbusPostgres",
                // Holding statements in a connection's trace hook (SQLiteReadThreadTests).
                .product(name: "GRDB", package: "GRDB.swift"),
                // `@testable import NimbusSQLite` reads the engine's SQLite C module too.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                // An upload's file written from `ByteBuffer`s (UploadFileTests).
                .product(name: "NIOCore", package: "swift-nio"),
                // Blobs named by their SHA-256 (AssetMigrationTests).
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // The SigV4 signer against AWS's published examples, and the S3 asset store against a
        // real S3-compatible server (moto's, started by scripts/throwaway-s3.sh).
        .testTarget(
            name: "NimbusObjectStoreTests",
            dependencies: [
                "NimbusTestSupport",
                "NimbusObjectStore", "NimbusStore", "NimbusProtocol",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "NimbusPostgresTests",
            dependencies: [
                "NimbusTestSupport",
                "NimbusEngines", "NimbusSQLite",
                "NimbusProtocol",
                "NimbusStore",
                "NimbusPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The dashboard's HTTP behaviour against a real server (sessions, CSRF, escaping, conflicts).
        .testTarget(
            name: "NimbusDashboardTests",
            dependencies: [
                "NimbusTestSupport",
                "NimbusEngines", "NimbusSQLite",
                "NimbusDashboard", "NimbusServer", "NimbusStore", "NimbusProtocol",
                // The traces page's tests make traced changes with the SDK.
                "Nimbus",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "NimbusServerTests",
            dependencies: [
                "NimbusTestSupport",
                "NimbusEngines", "NimbusSQLite",
                "NimbusProtocol",
                "NimbusStore",
                "NimbusServer",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // A fake OpenTelemetry collector (the OTLP export tests).
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // Raw TCP clients for the connection limit and timeout tests.
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                // Real WebSocket clients for the push channel tests.
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "WSCore", package: "swift-websocket"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // Reaching into the store's file to prove notifications share the write's transaction.
                .product(name: "GRDB", package: "GRDB.swift"),
                // `@testable import NimbusSQLite` reads the engine's SQLite C module too.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                // Dropping each PostgreSQL test's schema; rows written straight to storage.
                "NimbusPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // A local identity issuer: keys made and tokens signed by the tests.
                .product(name: "JWTKit", package: "jwt-kit"),
                // Spans started and ended by the tests (their lifetime, their IDs).
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "W3CTraceContext", package: "swift-w3c-trace-context"),
                // Request headers read the way the tracer reads them.
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // A journal's counters read from a registry of the test's own.
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
