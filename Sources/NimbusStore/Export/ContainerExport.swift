import Foundation
import NIOCore
import NimbusProtocol

/// A container's data written out as files (`nimbus export`, docs/OPERATIONS.md): every
/// database of each environment (the public one and each user's private one), its zones and
/// live records in CloudKit Web Services' record form, and the asset files its records
/// reference, as the server stores them.
///
/// ```
/// DIR/export.json                                   what was written (container, databases, counts)
/// DIR/<environment>/public/zones.json               the database's zones
/// DIR/<environment>/public/records/<zone>.jsonl     one record a line, as `records/lookup` returns it
/// DIR/<environment>/public/assets/<sha256>          each asset file once (its content address)
/// DIR/<environment>/private/<user record name>/…    the same for each user's private database
/// ```
///
/// It reads through the storage seams only (``RecordStore``, ``AssetStore``), so it is the same
/// on every engine, and holds one page of records and one chunk of a file at a time, never a
/// database. What the server holds end-to-end encrypted stays encrypted: `ENCRYPTED_BYTES`
/// values and the ciphertext of encrypted assets, as stored. Names in paths keep letters,
/// digits, `_` and `-`; any other byte is written `%XX`.
public enum ContainerExport {
    /// What an export wrote.
    public struct Summary: Sendable, Equatable {
        public var databases = 0
        public var zones = 0
        public var records = 0
        public var assets = 0
        public var assetBytes: Int64 = 0
        /// Assets records reference whose bytes the store no longer holds (not written).
        public var missingAssets = 0

        public init() {}

        public var json: JSON {
            .object([
                "databases": .int(Int64(databases)), "zones": .int(Int64(zones)), "records": .int(Int64(records)),
                "assets": .int(Int64(assets)), "assetBytes": .int(assetBytes), "missingAssets": .int(Int64(missingAssets)),
            ])
        }
    }

    /// The records read at a time.
    public static let pageSize = 200

    /// Writes `container`'s data from `store` and `assets` into `directory`, which must not
    /// exist or be empty.
    /// - Throws: ``CloudKitError`` NOT_FOUND for an unknown container, BAD_REQUEST for a
    ///   directory that holds files; any error of the store or the file system.
    @discardableResult
    public static func write(
        container: String, from store: any NimbusStorage, assets: any AssetStore, to directory: URL
    ) async throws -> Summary {
        guard try await store.listContainers().contains(container) else {
            throw CloudKitError(.notFound, "no container '\(container)' on this server")
        }
        let manager = FileManager.default
        if let existing = try? manager.contentsOfDirectory(atPath: directory.path), !existing.isEmpty {
            throw CloudKitError(.badRequest, "'\(directory.path)' is not empty: export into a new directory")
        }
        try manager.createDirectory(at: directory, withIntermediateDirectories: true)
        let owners = try await store.containerUsers(container: container).map(\.recordName).sorted()
        var summary = Summary()
        var written: [JSON] = []
        for environment in ContainerEnvironment.allCases {
            var databases = [DatabaseKey(container: container, environment: environment, scope: .public, owner: DatabaseKey.publicOwner)]
            databases += owners.map { DatabaseKey(container: container, environment: environment, scope: .private, owner: $0) }
            for database in databases {
                let folder = directory.appendingPathComponent(environment.rawValue).appendingPathComponent(database.scope.rawValue)
                let place = database.scope == .public ? folder : folder.appendingPathComponent(pathComponent(database.owner))
                let zones = try await writeDatabase(database, from: store, assets: assets, to: place, summary: &summary)
                guard !zones.isEmpty else { continue }
                summary.databases += 1
                written.append(
                    .object([
                        "environment": .string(environment.rawValue), "scope": .string(database.scope.rawValue),
                        "ownerRecordName": .string(database.owner),
                        "path": .string(String(place.path.dropFirst(directory.path.count + 1))),
                        "zones": .array(zones.map { .string($0) }),
                    ]))
            }
        }
        let manifest = JSON.object([
            "format": .int(1), "container": .string(container), "databases": .array(written), "summary": summary.json,
        ])
        try Data(manifest.serialized().utf8).write(to: directory.appendingPathComponent("export.json"))
        return summary
    }

    /// Writes one database; returns the names of the zones written (none when it holds no
    /// custom zone and no record: nothing is written then).
    private static func writeDatabase(
        _ database: DatabaseKey, from store: any RecordStore, assets: any AssetStore, to place: URL, summary: inout Summary
    ) async throws -> [String] {
        let zones = try await store.listZones(in: database).filter { !$0.deleted }
        var written: [String] = []
        for zone in zones {
            let owner = database.scope == .public ? nil : database.owner
            let zoneID = ZoneID(zoneName: zone.zoneName, ownerRecordName: owner)
            let closing = ",\"zoneID\":" + zoneID.wireJSON.serialized() + "}"
            var file: FileHandle?
            defer { try? file?.close() }
            var token: String?
            repeat {
                let page: RecordChangesPage
                do {
                    page = try await store.recordChanges(zone: zone.zoneName, since: token, limit: pageSize, in: database)
                } catch let error as CloudKitError where error.code == .zoneNotFound {
                    break  // deleted while the export ran
                }
                token = page.syncToken
                var lines = ""
                var hashes = Set<String>()
                for record in page.records where !record.deleted {
                    record.appendWritten(closedBy: closing, to: &lines)
                    lines.append("\n")
                    hashes.formUnion(AssetReferences.hashes(of: record))
                    summary.records += 1
                }
                if !lines.isEmpty {
                    if file == nil { file = try createFile(place.appendingPathComponent("records"), pathComponent(zone.zoneName) + ".jsonl") }
                    try file?.write(contentsOf: Data(lines.utf8))
                }
                for hash in hashes.sorted() {
                    try await writeAsset(AssetBlobKey(database: database, sha256: hash), from: assets, to: place, summary: &summary)
                }
                if !page.moreComing { break }
            } while true
            if file != nil || zone.zoneName != ZoneID.defaultZoneName { written.append(zone.zoneName) }
        }
        guard !written.isEmpty else { return [] }
        let zonesJSON = JSON.array(
            written.map { name in
                .object(["zoneID": ZoneID(zoneName: name, ownerRecordName: database.scope == .public ? nil : database.owner).wireJSON])
            })
        try FileManager.default.createDirectory(at: place, withIntermediateDirectories: true)
        try Data(zonesJSON.serialized().utf8).write(to: place.appendingPathComponent("zones.json"))
        summary.zones += written.count
        return written
    }

    /// Copies one asset's bytes, a chunk at a time, unless this database's export has it.
    private static func writeAsset(
        _ key: AssetBlobKey, from assets: any AssetStore, to place: URL, summary: inout Summary
    ) async throws {
        let folder = place.appendingPathComponent("assets")
        guard !FileManager.default.fileExists(atPath: folder.appendingPathComponent(key.sha256).path) else { return }
        guard let size = try await assets.size(of: key) else {
            summary.missingAssets += 1
            return
        }
        let file = try createFile(folder, key.sha256)
        defer { try? file.close() }
        try await assets.read(key, range: 0..<size) { buffer in
            try file.write(contentsOf: Data(buffer.readableBytesView))
        }
        summary.assets += 1
        summary.assetBytes += size
    }

    private static func createFile(_ folder: URL, _ name: String) throws -> FileHandle {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent(name)
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
        }
        return try FileHandle(forWritingTo: url)
    }

    /// `name` as one path component: letters, digits, `_` and `-` as they are, every other
    /// byte of its UTF-8 as `%XX`.
    static func pathComponent(_ name: String) -> String {
        var text = ""
        for byte in name.utf8 {
            let kept =
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F
                || byte == 0x2D
            if kept {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                text += String(format: "%%%02X", byte)
            }
        }
        return text
    }
}
