import Foundation
import NimbusDocuments
import NimbusTestSupport
import Testing

/// Two devices of one user sync their folders through a real server, on both engines.
@Suite("Documents on two devices")
struct TwoDeviceTests {
    @Test(arguments: Engine.available)
    func filesAndFoldersReachTheOtherDevice(engine: Engine) async throws {
        try await DocumentsHarness.with(engine: engine) { harness in
            let mac = try harness.device("mac")
            let phone = try harness.device("phone")
            try mac.write("plan", to: "Projects/Plan.txt")
            try mac.write("deep", to: "Projects/2026/Q4/notes.md")
            try mac.write("top", to: "readme.txt")
            try await mac.folder.start()
            try await phone.folder.start()
            #expect(try phone.tree() == mac.tree())
            #expect(phone.read("Projects/2026/Q4/notes.md") == "deep")
            let item = try #require(try await phone.folder.item(at: DocumentPath("Projects/Plan.txt")))
            #expect(item.size == 4 && item.isDownloaded && item.device == "mac" && !item.isUploading)
        }
    }

    /// A rename, a move into another folder and a folder's rename change fields only: no
    /// byte is uploaded again (counted at the asset transport), and the other device moves
    /// its copies without downloading them again.
    @Test(arguments: Engine.available)
    func renamesAndMovesUploadNothing(engine: Engine) async throws {
        try await DocumentsHarness.with(engine: engine) { harness in
            let mac = try harness.device("mac")
            let phone = try harness.device("phone")
            try mac.write(String(repeating: "x", count: 100_000), to: "Inbox/big.bin")
            try mac.write("small", to: "Inbox/small.txt")
            try FileManager.default.createDirectory(at: mac.url("Archive"), withIntermediateDirectories: true)
            try await mac.folder.start()
            try await phone.folder.start()
            let uploadsBefore = mac.transfers.uploads
            let downloadsBefore = phone.transfers.downloads
            #expect(uploadsBefore >= 2)

            try FileManager.default.moveItem(at: mac.url("Inbox/big.bin"), to: mac.url("Archive/renamed.bin"))
            try FileManager.default.moveItem(at: mac.url("Inbox"), to: mac.url("Letters"))
            try await mac.folder.sync()
            try await phone.folder.sync()
            #expect(mac.transfers.uploads == uploadsBefore, "a rename or move uploads nothing")
            #expect(phone.transfers.downloads == downloadsBefore, "the other device moves its copies")
            #expect(try phone.tree() == mac.tree())
            #expect(phone.read("Archive/renamed.bin")?.count == 100_000)
            #expect(phone.read("Letters/small.txt") == "small")
            #expect(!FileManager.default.fileExists(atPath: phone.url("Inbox").path))

            // An edit does upload: the counter counts.
            try mac.write("changed", to: "Letters/small.txt")
            try await mac.folder.sync()
            #expect(mac.transfers.uploads > uploadsBefore)
        }
    }

    /// Renaming "notes.txt" to "Notes.txt" (the same name to a case-insensitive disk) reaches
    /// the other device, which renames through a temporary name.
    @Test(arguments: Engine.available)
    func caseOnlyRename(engine: Engine) async throws {
        try await DocumentsHarness.with(engine: engine) { harness in
            let mac = try harness.device("mac")
            let phone = try harness.device("phone")
            try mac.write("n", to: "notes.txt")
            try await mac.folder.start()
            try await phone.folder.start()
            try FileManager.default.moveItem(at: mac.url("notes.txt"), to: mac.url("tmp"))
            try FileManager.default.moveItem(at: mac.url("tmp"), to: mac.url("Notes.txt"))
            try await mac.folder.sync()
            try await phone.folder.sync()
            #expect(try phone.tree() == ["Notes.txt": "n"])
            #expect(try await phone.folder.items().map(\.name) == ["Notes.txt"])
        }
    }

    /// Two devices with `name` synced, then edited on both: "mac's edit" then "phone's
    /// edit!". With `phoneScansFirst` the phone queues its edit before it has the Mac's (so
    /// the server's merge finds the conflict); otherwise its next pass's scan does.
    static func conflictingEdits(
        _ harness: DocumentsHarness, name: String, phoneScansFirst: Bool
    ) async throws -> (mac: Device, phone: Device) {
        let mac = try harness.device("mac")
        let phone = try harness.device("phone")
        try mac.write("v1", to: name)
        try await mac.folder.start()
        try await phone.folder.start()
        try phone.write("phone's edit!", to: name)
        if phoneScansFirst { try await phone.folder.scan() }
        try mac.write("mac's edit", to: name)
        try await mac.folder.sync()
        try await phone.folder.sync()
        try await mac.folder.sync()
        return (mac, phone)
    }

    /// Both devices change one file before either has the other's change: the edit that
    /// reaches the server first stays the document, the other is kept beside it as a conflict
    /// version named for its device, both devices list it, and resolving keeps what the user
    /// picks. Found by the scan (`phoneScansFirst: false`) or by the server's merge (`true`).
    @Test(arguments: Engine.available, [false, true])
    func concurrentEditsKeepBothVersions(engine: Engine, phoneScansFirst: Bool) async throws {
        try await DocumentsHarness.with(engine: engine) { harness in
            let (mac, phone) = try await Self.conflictingEdits(harness, name: "Plan.txt", phoneScansFirst: phoneScansFirst)
            #expect(mac.read("Plan.txt") == "mac's edit")
            #expect(phone.read("Plan.txt") == "mac's edit")
            #expect(try phone.tree() == mac.tree())
            let versions = try await mac.folder.unresolvedConflictVersions(of: DocumentPath("Plan.txt"))
            let version = try #require(versions.first)
            #expect(versions.count == 1)
            #expect(version.device == "phone")
            #expect(version.path.description.hasPrefix("Plan (Conflict from phone, "))
            #expect(version.path.description.hasSuffix(").txt"))
            #expect(mac.read(version.path.description) == "phone's edit!")
            #expect(try await phone.folder.unresolvedConflictVersions(of: DocumentPath("Plan.txt")) == versions)

            // The phone's edit is the one to keep.
            try await mac.folder.resolveConflicts(of: DocumentPath("Plan.txt"), keeping: .keepVersion(version))
            try await phone.folder.sync()
            #expect(mac.read("Plan.txt") == "phone's edit!")
            #expect(phone.read("Plan.txt") == "phone's edit!")
            let (phoneTree, macTree) = (try phone.tree(), try mac.tree())
            #expect(phoneTree == ["Plan.txt": "phone's edit!"], "\(phoneTree)")
            #expect(macTree == ["Plan.txt": "phone's edit!"], "\(macTree)")
            #expect(try await phone.folder.unresolvedConflictVersions(of: DocumentPath("Plan.txt")).isEmpty)
        }
    }

    @Test(arguments: Engine.available)
    func keepingBothMakesTheVersionADocument(engine: Engine) async throws {
        try await DocumentsHarness.with(engine: engine) { harness in
            let (mac, phone) = try await Self.conflictingEdits(harness, name: "a.txt", phoneScansFirst: false)
            try await phone.folder.resolveConflicts(of: DocumentPath("a.txt"), keeping: .keepBoth)
            try await mac.folder.sync()
            #expect(try await mac.folder.unresolvedConflictVersions(of: DocumentPath("a.txt")).isEmpty)
            #expect(try mac.tree().count == 2)
            #expect(try mac.tree() == phone.tree())
            #expect(Set(try mac.tree().values.compactMap { $0 }) == ["mac's edit", "phone's edit!"])
        }
    }

    @Test(arguments: Engine.available)
    func keepingCurrentDeletesTheVersions(engine: Engine) async throws {
        try await DocumentsHarness.with(engine: engine) { harness in
            let (mac, phone) = try await Self.conflictingEdits(harness, name: "a.txt", phoneScansFirst: true)
            try await phone.folder.resolveConflicts(of: DocumentPath("a.txt"), keeping: .keepCurrent)
            try await mac.folder.sync()
            let (phoneTree, macTree) = (try phone.tree(), try mac.tree())
            #expect(macTree == ["a.txt": "mac's edit"], "\(macTree)")
            #expect(phoneTree == ["a.txt": "mac's edit"], "\(phoneTree)")
        }
    }

    /// Files moved, renamed and deleted in the file manager (not through the library) are
    /// changes, not losses: the other device moves and deletes the same.
    @Test(arguments: Engine.available)
    func changesBehindTheAppsBack(engine: Engine) async throws {
        try await DocumentsHarness.with(engine: engine) { harness in
            let mac = try harness.device("mac")
            let phone = try harness.device("phone")
            try mac.write("keep", to: "a/keep.txt")
            try mac.write("gone", to: "a/gone.txt")
            try mac.write("folder file", to: "b/inner/x.txt")
            try await mac.folder.start()
            try await phone.folder.start()

            try FileManager.default.removeItem(at: mac.url("a/gone.txt"))
            try FileManager.default.moveItem(at: mac.url("a/keep.txt"), to: mac.url("b/kept.txt"))
            try FileManager.default.removeItem(at: mac.url("b/inner"))
            try mac.write("edited behind", to: "b/kept.txt")
            try await mac.folder.sync()
            try await phone.folder.sync()
            let phoneTree = try phone.tree()
            #expect(phoneTree == ["a": nil, "b": nil, "b/kept.txt": "edited behind"], "\(phoneTree)")
            let macTree = try mac.tree()
            #expect(macTree == phoneTree, "\(macTree)")
        }
    }

    /// Turning sync on for a folder that has files: an identical file is not duplicated, a
    /// different one under the same name gets a suffix, the same on both devices.
    @Test(arguments: Engine.available)
    func turningSyncOnMergesExistingFiles(engine: Engine) async throws {
        try await DocumentsHarness.with(engine: engine) { harness in
            let mac = try harness.device("mac")
            try mac.write("same", to: "Docs/same.txt")
            try mac.write("mac version", to: "Docs/differs.txt")
            try await mac.folder.start()
            let uploads = mac.transfers.uploads

            let phone = try harness.device("phone")
            try phone.write("same", to: "docs/same.txt")  // another case: the same folder
            try phone.write("phone version", to: "Docs/differs.txt".replacingOccurrences(of: "Docs", with: "docs"))
            try phone.write("only here", to: "docs/new.txt")
            let phoneUploads = phone.transfers.uploads
            try await phone.folder.start()
            try await mac.folder.sync()
            #expect(mac.transfers.uploads == uploads)
            #expect(phone.transfers.uploads - phoneUploads == 2, "differs.txt and new.txt, not same.txt")
            let tree = try mac.tree()
            let phoneTree = try phone.tree()
            #expect(phoneTree == tree, "\(phoneTree) on the phone, \(tree) on the Mac")
            #expect(tree.count == 5)
            #expect(Set(tree.values.compactMap { $0 }) == ["same", "mac version", "phone version", "only here"])
            #expect(tree.keys.contains { $0.hasSuffix("differs 2.txt") })
        }
    }

    /// On demand (as on iOS): the other device's files are listed with their size, not
    /// downloaded, until the app asks for one.
    @Test(arguments: Engine.available)
    func placeholdersDownloadOnDemand(engine: Engine) async throws {
        try await DocumentsHarness.with(engine: engine) { harness in
            let mac = try harness.device("mac")
            let phone = try harness.device("phone", policy: .onDemand)
            try mac.write("0123456789", to: "Photos/one.raw")
            try mac.write("abc", to: "Photos/two.raw")
            try await mac.folder.start()
            try await phone.folder.start()
            let items = try await phone.folder.items()
            #expect(items.map(\.path.description) == ["Photos", "Photos/one.raw", "Photos/two.raw"])
            let one = try #require(items.first { $0.path.description == "Photos/one.raw" })
            #expect(one.size == 10 && !one.isDownloaded && one.downloadingStatus == .notDownloaded)
            #expect(try phone.tree() == ["Photos": nil])
            #expect(phone.transfers.downloads == 0)

            let url = try await phone.folder.download(DocumentPath("Photos/one.raw"))
            #expect(try String(contentsOf: url, encoding: .utf8) == "0123456789")
            #expect(try await phone.folder.item(at: DocumentPath("Photos/one.raw"))?.isDownloaded == true)
            // Kept from then on: an edit on the Mac arrives.
            try mac.write("new bytes", to: "Photos/one.raw")
            try await mac.folder.sync()
            try await phone.folder.sync()
            #expect(phone.read("Photos/one.raw") == "new bytes")
            #expect(phone.read("Photos/two.raw") == nil)
        }
    }
}
