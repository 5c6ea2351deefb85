import ArgumentParser
import Foundation
import Logging
import NimbusDashboard
import NimbusEngines
import NimbusServer
import NimbusStore

enum ServerConfigurationDefaults {
    static var dataDirectory: String { ServerConfiguration.defaultDataDirectory }
}

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run the server on embedded SQLite (Ctrl-C stops it cleanly).")

    @Option(name: .long, help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(name: .long, help: "The port to listen on (0 picks a free one).")
    var port = 8080

    @OptionGroup var data: DataOptions

    @Option(
        name: .customLong("public-url"),
        help: ArgumentHelp(
            """
            The address clients reach the server at (or set NIMBUS_PUBLIC_URL): every mailed link and absolute URL \
            starts with it, and requests naming another host are refused. Needed with --smtp-url.
            """, valueName: "https://sync.example.com"))
    var publicURL: String?

    @Option(
        name: .customLong("trusted-proxy"),
        help: ArgumentHelp(
            """
            A reverse proxy (IP address or CIDR range, repeatable; or NIMBUS_TRUSTED_PROXIES, comma-separated) whose \
            Forwarded / X-Forwarded-Host / X-Forwarded-Proto headers are believed. Nobody else's are.
            """, valueName: "10.0.0.0/8"))
    var trustedProxy: [String] = []

    @Option(name: .long, help: "Days to keep tombstones; older sync tokens get CHANGE_TOKEN_EXPIRED.")
    var tombstoneRetentionDays: Double = 30

    @Option(name: .long, help: "Log level (trace, debug, info, notice, warning, error).")
    var logLevel = "info"

    @Option(name: .long, help: "Log lines as text (for people) or json (one object a line, for log collectors).")
    var logFormat = "text"

    @Flag(
        inversion: .prefixedNo,
        help: "Count requests, commits, pushes… and serve them as Prometheus text at GET /metrics.")
    var metrics = true

    @Option(
        name: .long,
        help: "Require 'Authorization: Bearer TOKEN' to read /metrics (or set NIMBUS_METRICS_TOKEN, kept out of `ps`).")
    var metricsToken: String?

    @Option(name: .long, help: "The largest request body any operation accepts, in bytes (each operation has its own lower limit).")
    var maxBodyBytes = ServerConfiguration().maxBodyBytes

    @Option(name: .long, help: "Seconds a new connection has to send its first request head.")
    var headerTimeoutSeconds: Double = ConnectionSettings().headerTimeout.inSeconds

    @Option(name: .long, help: "Seconds a request body may stall while the server reads it.")
    var bodyTimeoutSeconds: Double = ConnectionSettings().bodyTimeout.inSeconds

    @Option(name: .long, help: "Seconds an idle keep-alive connection stays open.")
    var idleTimeoutSeconds: Double = ConnectionSettings().idleTimeout.inSeconds

    @Option(
        name: .long,
        help: "Open connections one client address may hold (0: no limit; use 0 behind a load balancer or reverse proxy).")
    var maxConnectionsPerAddress = ConnectionSettings().maxConnectionsPerAddress

    @Option(name: .long, help: "The largest asset (file) an upload accepts, in bytes.")
    var maxAssetBytes = AssetSettings().maxAssetBytes

    @Option(name: .long, help: "A directory for asset bytes (shared by every node); the same as --assets file:///DIR.")
    var assetDirectory: String?

    @OptionGroup(title: "Asset storage") var assetStorage: AssetStorageOptions

    @Option(name: .long, help: "Seconds an unreferenced asset or unrecorded file is kept before the collector deletes it.")
    var assetGraceSeconds: Double = AssetSettings().gracePeriod.inSeconds

    @Option(name: .long, help: "Seconds between two runs of the asset collector.")
    var assetCollectionIntervalSeconds: Double = AssetSettings().collectionInterval.inSeconds

    @Option(name: .long, help: "The most bytes a user's private database may hold (records + assets); default: no quota.")
    var userQuotaBytes: Int64?

    @Option(name: .long, help: "Days a session (web auth token) may go unused before it expires.")
    var sessionIdleDays: Double = 30

    @Option(
        name: .customLong("smtp-url"),
        help: """
            Send sign-in mail (verification, password reset) over SMTP: smtp://user@host:587 (STARTTLS), \
            smtps://user@host (TLS) or smtp+insecure://127.0.0.1:25 (a local relay). Put the password in \
            NIMBUS_SMTP_PASSWORD rather than the URL. Default: mail is written to the log.
            """)
    var smtpURL: String?

    @Option(name: .long, help: "The address sign-in mail comes from (needed with --smtp-url).")
    var mailFrom: String?

    @Option(name: .long, help: "The name shown beside --mail-from.")
    var mailFromName: String?
    @Option(
        name: .long,
        help: "The most bytes a container's public database may hold in each environment (records + assets); default: no quota.")
    var containerQuotaBytes: Int64?
    @Flag(
        name: .long, inversion: .prefixedNo,
        help: "Record the spans of requests that carry a W3C traceparent (what `nimbus trace` shows).")
    var tracing = true
    @Option(name: .long, help: "The share (0 to 1) of requests without a traceparent that are traced too.")
    var traceSample: Double = 0
    @Option(name: .long, help: "Days to keep trace spans.")
    var traceRetentionDays: Double = 7
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Send every trace span to this OpenTelemetry collector too (OTLP/HTTP with JSON, to its /v1/traces).",
            valueName: "http://host:4318"))
    var traceOtlpEndpoint: String?
    @Option(
        name: .long,
        help: ArgumentHelp("A header for the collector (repeatable), such as a vendor's API key.", valueName: "name=value"))
    var traceOtlpHeader: [String] = []

    @OptionGroup(title: "Throttling") var throttle: ThrottleOptions

    /// `--trace-otlp-header` values, checked; with `--trace-otlp-endpoint`, checked too.
    func otlpHeaders() throws -> [String: String] {
        if let endpoint = traceOtlpEndpoint {
            guard let url = URL(string: endpoint), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                throw ValidationError(
                    "--trace-otlp-endpoint must be an http:// or https:// URL (a collector's OTLP/HTTP port, 4318), got '\(endpoint)'")
            }
        } else if !traceOtlpHeader.isEmpty {
            throw ValidationError("--trace-otlp-header needs --trace-otlp-endpoint")
        }
        var headers: [String: String] = [:]
        for header in traceOtlpHeader {
            guard let equals = header.firstIndex(of: "="), equals != header.startIndex else {
                throw ValidationError("--trace-otlp-header must be name=value, got '\(header)'")
            }
            let name = String(header[..<equals]).trimmingCharacters(in: .whitespaces)
            let value = String(header[header.index(after: equals)...]).trimmingCharacters(in: .whitespaces)
            guard name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_".contains($0)) }), !name.isEmpty,
                !value.contains(where: { $0 == "\r" || $0 == "\n" })
            else {
                throw ValidationError("--trace-otlp-header '\(header)': the name must be letters, digits, - or _, the value one line")
            }
            headers[name] = value
        }
        return headers
    }

    func validate() throws {
        guard (0...1).contains(traceSample) else { throw ValidationError("--trace-sample must be within 0 and 1, got \(traceSample)") }
        guard traceRetentionDays > 0, traceRetentionDays <= 3650 else {
            throw ValidationError("--trace-retention-days must be more than 0 and at most 3650, got \(traceRetentionDays)")
        }
        _ = try logSettings()
        _ = try otlpHeaders()
        if !metrics, metricsToken != nil { throw ValidationError("--metrics-token needs metrics on (drop --no-metrics)") }
        if let metricsToken, metricsToken.isEmpty { throw ValidationError("--metrics-token must not be empty") }
        _ = try connectionSettings()
        _ = try assetSettings()
        try UsageReport.validate(userQuotaBytes, flag: "--user-quota-bytes")
        try UsageReport.validate(containerQuotaBytes, flag: "--container-quota-bytes")
        guard sessionIdleDays > 0, sessionIdleDays <= 3650 else {
            throw ValidationError("--session-idle-days must be more than 0 and at most 3650, got \(sessionIdleDays)")
        }
        let origin = try originSettings()
        if smtpURL != nil, origin.publicURL == nil {
            throw ValidationError(
                "--smtp-url needs --public-url (or NIMBUS_PUBLIC_URL): mailed links start with it, never with a host a client names")
        }
        _ = try smtpSettings()
    }

    /// `--public-url` and `--trusted-proxy` (or their environment variables), checked.
    func originSettings() throws -> OriginSettings {
        let environment = ProcessInfo.processInfo.environment
        let url = publicURL ?? environment["NIMBUS_PUBLIC_URL"].flatMap { $0.isEmpty ? nil : $0 }
        let proxies =
            trustedProxy.isEmpty
            ? (environment["NIMBUS_TRUSTED_PROXIES"] ?? "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }.filter { !$0.isEmpty }
            : trustedProxy
        var settings = OriginSettings()
        do throws(OriginSettingError) {
            if let url { settings.publicURL = try PublicURL(url) }
            for proxy in proxies { settings.trustedProxies.append(try AddressRange(proxy)) }
        } catch {
            throw ValidationError(error.message)
        }
        return settings
    }

    /// The SMTP flags, checked; `nil` without `--smtp-url`. The password comes from
    /// `NIMBUS_SMTP_PASSWORD` when it is set.
    func smtpSettings() throws -> SMTPSettings? {
        guard let smtpURL else {
            guard mailFrom == nil else { throw ValidationError("--mail-from needs --smtp-url") }
            return nil
        }
        guard let mailFrom else { throw ValidationError("--smtp-url needs --mail-from ADDRESS") }
        do {
            var settings = try SMTPSettings(
                url: smtpURL, from: mailFrom, password: ProcessInfo.processInfo.environment["NIMBUS_SMTP_PASSWORD"])
            settings.fromName = mailFromName
            return settings
        } catch let error as SMTPError {
            throw ValidationError(error.message)
        }
    }

    /// The asset flags, checked.
    func assetSettings() throws -> AssetSettings {
        guard maxAssetBytes > 0 else { throw ValidationError("--max-asset-bytes must be positive, got \(maxAssetBytes)") }
        guard assetGraceSeconds >= 0, assetCollectionIntervalSeconds > 0 else {
            throw ValidationError("--asset-grace-seconds must be 0 or more and --asset-collection-interval-seconds positive")
        }
        var settings = AssetSettings(maxAssetBytes: maxAssetBytes, location: try assetStorage.location(directory: assetDirectory))
        settings.previousLocation = try assetStorage.previousLocation()
        settings.redirectDownloads = assetStorage.redirect
        settings.gracePeriod = .milliseconds(Int64(assetGraceSeconds * 1000))
        settings.collectionInterval = .milliseconds(Int64(assetCollectionIntervalSeconds * 1000))
        return settings
    }

    /// The log flags, checked.
    func logSettings() throws -> (level: Logger.Level, format: LogFormat) {
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw ValidationError(
                "--log-level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), got '\(logLevel)'")
        }
        guard let format = LogFormat(rawValue: logFormat) else {
            throw ValidationError("--log-format must be text or json, got '\(logFormat)'")
        }
        return (level, format)
    }

    func run() async throws {
        MallocTuning.apply()
        let tail = LogTail()
        let (level, format) = try logSettings()
        var logger = Logger(label: "nimbus") { label in
            MultiplexLogHandler([ServerLogHandler(label: label, format: format), tail.handler(label: label)])
        }
        logger.logLevel = level
        var configuration = ServerConfiguration(
            host: host, port: port, tombstoneRetention: .milliseconds(Int64(tombstoneRetentionDays * 86_400_000)))
        configuration.storage = data.location
        configuration.origin = try originSettings()
        configuration.maxBodyBytes = maxBodyBytes
        configuration.connections = try connectionSettings()
        configuration.assets = try assetSettings()
        configuration.userQuotaBytes = userQuotaBytes
        configuration.signIn.sessionIdle = .milliseconds(Int64(sessionIdleDays * 86_400_000))
        if let smtp = try smtpSettings() {
            configuration.signIn.mailSender = try SMTPMailSender(settings: smtp, logger: logger)
        }
        configuration.containerQuotaBytes = containerQuotaBytes
        configuration.tracing.enabled = tracing
        configuration.tracing.sampleUntraced = traceSample
        configuration.tracing.retention = .milliseconds(Int64(traceRetentionDays * 86_400_000))
        configuration.tracing.otlpEndpoint = traceOtlpEndpoint
        configuration.tracing.otlpHeaders = try otlpHeaders()
        configuration.throttle = try throttle.settings()
        configuration.routeExtensions = [Dashboard()]
        configuration.logTail = tail
        configuration.metrics = MetricsSettings(
            enabled: metrics,
            bearerToken: metricsToken ?? ProcessInfo.processInfo.environment["NIMBUS_METRICS_TOKEN"].flatMap { $0.isEmpty ? nil : $0 })
        let server = try await RunningServer.start(configuration, handleSignals: true, logger: logger)
        print("Nimbus is listening on \(server.baseURL) (\(configuration.storage))")
        print("Dashboard: \(server.baseURL)/ (sign in as an operator; make one with `nimbus operator create NAME`)")
        if let publicURL = configuration.origin.publicURL {
            print("Public URL: \(publicURL) (mailed links and absolute URLs start with it; other hosts are refused)")
        }
        if configuration.metrics.enabled {
            let guarded = configuration.metrics.bearerToken == nil ? "" : " (bearer token required)"
            print("Metrics: \(server.baseURL)/metrics\(guarded)")
        }
        fflush(nil)
        try await server.waitUntilStopped()
        print("Nimbus stopped.")
    }

    /// The connection flags, checked: timeouts are positive, the limit is not negative.
    func connectionSettings() throws -> ConnectionSettings {
        for (flag, value) in [
            ("--header-timeout-seconds", headerTimeoutSeconds), ("--body-timeout-seconds", bodyTimeoutSeconds),
            ("--idle-timeout-seconds", idleTimeoutSeconds),
        ] where !(value > 0 && value <= 86_400) {
            throw ValidationError("\(flag) must be between 0 and 86400 seconds, got \(value)")
        }
        guard maxConnectionsPerAddress >= 0 else {
            throw ValidationError("--max-connections-per-address must be 0 (no limit) or more, got \(maxConnectionsPerAddress)")
        }
        guard maxBodyBytes > 0 else { throw ValidationError("--max-body-bytes must be positive, got \(maxBodyBytes)") }
        return ConnectionSettings(
            headerTimeout: .milliseconds(Int64(headerTimeoutSeconds * 1000)),
            bodyTimeout: .milliseconds(Int64(bodyTimeoutSeconds * 1000)),
            idleTimeout: .milliseconds(Int64(idleTimeoutSeconds * 1000)),
            maxConnectionsPerAddress: maxConnectionsPerAddress)
    }
}

extension Duration {
    /// The duration in seconds, as the flags give it.
    fileprivate var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

struct CompactCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact", abstract: "Remove tombstones older than the retention window now.")

    @OptionGroup var data: DataOptions

    @Option(name: .long, help: "Days to keep tombstones.")
    var tombstoneRetentionDays: Double = 30

    func run() async throws {
        let now = WallClock.system.nowMillis()
        let report = try await withStore(data) {
            try await $0.compact(retentionMillis: Int64(tombstoneRetentionDays * 86_400_000), now: now)
        }
        print("removed \(report.tombstonesRemoved) tombstones and \(report.zonesRemoved) deleted zones")
    }
}
