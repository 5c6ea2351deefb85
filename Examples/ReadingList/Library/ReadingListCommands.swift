import Foundation
import GRDB
import NIOConcurrencyHelpers
import Nimbus
import NimbusSync

/// The `reading-list` commands as functions: the executable parses arguments and calls
/// these; tests call them directly. Each writes its output through `output`, line by line.
public struct ReadingListCommands: Sendable {
    public let output: @Sendable (String) -> Void
    let now: @Sendable () -> Int64

    public init(
        output: @escaping @Sendable (String) -> Void = { print($0); fflush(nil) },
        now: @escaping @Sendable () -> Int64 = ReadingList.wallClock
    ) {
        self.output = output
        self.now = now
    }

    /// `init`: saves the server, container and tokens in the device directory (keeping the
    /// device ID of an earlier init), then, unless `offline`, runs the setup chain (zones,
    /// subscription) and the first fetch.
    public func initialize(
        directory: String, serverURL: String, container: String, apiToken: String, webAuthToken: String? = nil,
        environment: String = "development", offline: Bool = false
    ) async throws {
        let previous = try? Device.open(directory: directory).configuration
        let configuration = DeviceConfiguration(
            serverURL: serverURL, container: container, environment: environment, apiToken: apiToken,
            webAuthToken: webAuthToken ?? "", deviceID: previous?.deviceID ?? UUID().uuidString)
        let device = try Device.initialize(directory: directory, configuration: configuration, now: now)
        output("Device \(configuration.deviceID) initialized in \(directory)")
        guard device.session != nil || webAuthToken?.isEmpty == false else {
            output("Nobody is signed in: reading-list signup, verify, then signin")
            return
        }
        if !offline { try await sync(device, strict: true) }
    }

    /// `signup --email --password`: registers a built-in account; the server mails a code
    /// for `verify`.
    public func signUp(directory: String, email: String, password: String) async throws {
        let device = try Device.open(directory: directory, now: now)
        try await device.account().signUp(email: email, password: password)
        output("Check \(email) for a code, then: reading-list verify --email \(email) --code CODE")
    }

    /// `verify --email --code`: verifies the account's address with the mailed code.
    public func verify(directory: String, email: String, code: String) async throws {
        let device = try Device.open(directory: directory, now: now)
        try await device.account().verify(email: email, code: code)
        output("Verified \(email); now: reading-list signin --email \(email)")
    }

    /// `signin --email --password`: signs in and keeps the session in the device directory
    /// (`session.json`), used from then on instead of an operator-made token; then, unless
    /// `offline`, syncs. Another user than the one this device's list belongs to finds the
    /// previous user's list and unsent changes quarantined, never sent as theirs.
    public func signIn(directory: String, email: String, password: String, offline: Bool = false) async throws {
        let device = try Device.open(directory: directory, now: now)
        let user = try await device.account().signIn(
            email: email, password: password, deviceName: "reading-list \(device.configuration.deviceID.prefix(8))",
            platform: "cli")
        output("Signed in as \(email) (\(user))")
        if !offline { try await sync(try Device.open(directory: directory, now: now), strict: true) }
    }

    /// `signout`: revokes this device's session on the server and forgets it. The list and
    /// its unsent changes stay on the device for the next sign-in.
    public func signOut(directory: String) async throws {
        let device = try Device.open(directory: directory, now: now)
        let account = try await device.account()
        guard let user = await account.userRecordName else {
            output("Nobody is signed in on this device")
            return
        }
        try await account.signOut()
        output("Signed out (\(user))")
    }

    /// `add <url> [--title] [--thumbnail FILE]`: the thumbnail is copied into the device
    /// directory first (the upload, on this sync or a later one, reads that copy).
    public func add(
        directory: String, url: String, title: String?, thumbnail: String? = nil, offline: Bool = false
    ) async throws {
        let device = try Device.open(directory: directory, now: now)
        let copy = try thumbnail.map { try device.keepThumbnail(URL(fileURLWithPath: $0)) }
        let bookmark = try device.readingList.add(url: url, title: title, thumbnail: copy)
        output("Bookmarked \(bookmark.id)  \(bookmark.title)" + (copy == nil ? "" : "  (with a thumbnail)"))
        if !offline { try await sync(device) }
    }

    /// `thumbnail <id> [--output FILE]`: fetches the bookmark's thumbnail (downloaded on
    /// first use) and prints where it is, or copies it to `output`.
    public func thumbnail(directory: String, reference: String, outputFile: String? = nil) async throws {
        let device = try Device.open(directory: directory, now: now)
        guard let file = try await device.readingList.thumbnail(of: reference) else {
            output("No thumbnail for \(reference)")
            return
        }
        if let outputFile {
            let destination = URL(fileURLWithPath: outputFile)
            try? FileManager.default.removeItem(at: destination)
            try FileManager.default.copyItem(at: file, to: destination)
            output("Thumbnail saved to \(outputFile)")
        } else {
            output("Thumbnail at \(file.path)")
        }
    }

    /// `remove <id>`.
    public func remove(directory: String, reference: String, offline: Bool = false) async throws {
        let device = try Device.open(directory: directory, now: now)
        let bookmark = try device.readingList.remove(reference)
        output("Removed \(bookmark.id)  \(bookmark.title)")
        if !offline { try await sync(device) }
    }

    /// `read <id>`: marks the article read (one more read on its counter).
    public func read(directory: String, reference: String, offline: Bool = false) async throws {
        let device = try Device.open(directory: directory, now: now)
        let state = try device.readingList.markRead(reference)
        output("Marked \(state.id) read (\(state.readCount) read\(state.readCount == 1 ? "" : "s"))")
        if !offline { try await sync(device) }
    }

    /// `list`: prints the list from the local store before any network call, then (unless
    /// `offline`) syncs and prints it again if it changed.
    public func list(directory: String, offline: Bool = false) async throws {
        let device = try Device.open(directory: directory, now: now)
        let before = try device.readingList.snapshot()
        ListView.render(before).forEach(output)
        guard !offline else { return }
        try await sync(device)
        let after = try device.readingList.snapshot()
        if after != before {
            output("")
            output("After sync:")
            ListView.render(after).forEach(output)
        }
    }

    /// `status [--json]`: why this device did or did not sync, from its local store (no
    /// network): pending changes with their age, attempts and last error, each zone's last
    /// fetch and send, the token, the subscription, given-up changes, conflicts, throttling.
    public func status(directory: String, json: Bool = false) async throws {
        let device = try Device.open(directory: directory, now: now)
        let diagnostics = try await device.engine.diagnostics()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            encoder.dateEncodingStrategy = .iso8601
            output(String(decoding: try encoder.encode(diagnostics), as: UTF8.self))
        } else {
            output("Device \(device.configuration.deviceID) (\(device.configuration.serverURL))")
            diagnostics.reportLines.forEach(output)
        }
    }

    /// `refresh [zone]`: fetches that zone's changes only, then prints the list.
    public func refresh(directory: String, zone: String = ReadingListSchema.bookmarksZone) async throws {
        let device = try Device.open(directory: directory, now: now)
        let started = ContinuousClock.now
        try await device.readingList.refresh(zone: zone)
        output("Refreshed \(zone) in \(Self.milliseconds(ContinuousClock.now - started)) ms")
        ListView.render(try device.readingList.snapshot()).forEach(output)
    }

    /// `watch`: a live view of the list, redrawn whenever the local store changes (after a
    /// push made the engine fetch, or a send). Runs until cancelled, or after `maxRedraws`.
    public func watch(directory: String, clearScreen: Bool, maxRedraws: Int? = nil) async throws {
        let device = try Device.open(directory: directory, now: now)
        let status = WatchStatus()
        let feed = await PushFeed.start(client: device.pushClient(), engine: device.engine) { event in
            switch event {
            case .connected: status.set("push channel connected")
            case .notification: status.push()
            case .disconnected(let error, let retry):
                status.set("push channel down (\(error.message))" + (retry.map { ", retrying in \($0)" } ?? ""))
            }
        }
        let events = device.engine.events()
        let eventTask = Task {
            for await event in events {
                switch event {
                case .fetched(let zone, let saved, let deleted):
                    status.set("fetched \(zone): \(saved.count) saved, \(deleted.count) deleted")
                case .conflictResolved(let conflict):
                    let fields = conflict.resolutions.map { "\($0.field) → \($0.winner.rawValue)" }
                    status.set("conflict on \(conflict.recordName) resolved: \(fields.joined(separator: ", "))")
                case .sent(let saved, let deleted, let failed):
                    status.set("sent \(saved.count) saved, \(deleted.count) deleted, \(failed.count) failed")
                default: break
                }
            }
        }
        defer { eventTask.cancel() }
        do {
            try await feed.waitUntilConnected(timeout: .seconds(5))
        } catch {
            status.set("no push channel yet; still trying (the list shows what this device has)")
        }
        let syncTask = Task {
            do { try await device.readingList.sync() } catch { status.set("sync failed: \(error)") }
        }
        defer { syncTask.cancel() }
        var redraws = 0
        do {
            for try await snapshot in device.readingList.snapshots() {
                if clearScreen { output("\u{1B}[H\u{1B}[2J", terminator: false) }
                ListView.render(snapshot).forEach(output)
                output("")
                output("[\(ListView.clock(now()))] \(status.line) (pushes: \(feed.pushesReceived)); Ctrl-C quits")
                if !clearScreen { output(String(repeating: "-", count: 60)) }
                redraws += 1
                if let maxRedraws, redraws >= maxRedraws { break }
            }
        } catch {
            await feed.stop()
            if error is CancellationError { return }
            throw error
        }
        await feed.stop()
    }

    private func output(_ text: String, terminator: Bool) {
        if terminator { output(text) } else { print(text, terminator: ""); fflush(nil) }
    }

    /// Syncs and reports; a failure leaves local edits safe in the outbox. With `strict` a
    /// failure is an error (init), otherwise a warning.
    func sync(_ device: Device, strict: Bool = false) async throws {
        let started = ContinuousClock.now
        do {
            try await device.readingList.sync()
        } catch {
            if strict { throw error }
            let pending = (try? device.readingList.store.pendingCount()) ?? 0
            output("Not synced (\(error)); \(pending) change\(pending == 1 ? "" : "s") kept on this device for the next sync")
            return
        }
        let pending = try device.readingList.store.pendingCount()
        output(
            "Synced with \(device.configuration.serverURL) in \(Self.milliseconds(ContinuousClock.now - started)) ms"
                + (pending > 0 ? " (\(pending) change\(pending == 1 ? "" : "s") not sent)" : ""))
    }

    static func milliseconds(_ duration: Duration) -> String {
        let ms = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        return String(format: "%.1f", ms)
    }
}

/// The `watch` view's status line, set from the push and engine event tasks.
final class WatchStatus: Sendable {
    private let state = NIOLockedValueBox((line: "starting", pushes: 0))

    func set(_ line: String) { state.withLockedValue { $0.line = line } }
    func push() { state.withLockedValue { $0.line = "push received; fetching" } }
    var line: String { state.withLockedValue { $0.line } }
}
