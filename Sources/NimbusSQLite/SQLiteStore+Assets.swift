import GRDB
import NimbusProtocol
import NimbusStore

extension SQLiteStore {
    /// Schema v7 ("v7-assets"): asset rows (the blobs a database holds), reference rows (which
    /// live record versions hold them) and upload rows (receipts and their bindings).
    static func migrateV7Assets(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE assets (
                    db INTEGER NOT NULL,
                    sha256 TEXT NOT NULL,
                    size INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (db, sha256)
                ) WITHOUT ROWID;
                CREATE TABLE asset_refs (
                    db INTEGER NOT NULL,
                    zone TEXT NOT NULL,
                    record TEXT NOT NULL,
                    sha256 TEXT NOT NULL,
                    PRIMARY KEY (db, zone, record, sha256)
                ) WITHOUT ROWID;
                CREATE INDEX asset_refs_by_asset ON asset_refs(db, sha256);
                CREATE TABLE asset_uploads (
                    id TEXT PRIMARY KEY,
                    db INTEGER NOT NULL,
                    user_name TEXT NOT NULL,
                    zone TEXT NOT NULL,
                    record TEXT NOT NULL,
                    record_type TEXT,
                    field TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL,
                    sha256 TEXT,
                    size INTEGER,
                    receipt TEXT UNIQUE,
                    used INTEGER NOT NULL DEFAULT 0
                );
                CREATE INDEX asset_uploads_by_expiry ON asset_uploads(expires_at);
                CREATE INDEX asset_uploads_by_asset ON asset_uploads(db, sha256);
                """)
    }

    /// The asset context of a modify: the uploads its receipts name
    /// (``AssetContext/receipts(for:)``) and the assets it names without one
    /// (``AssetContext/namedHashes(for:)``).
    static func assetContext(
        _ db: Database, database: DatabaseKey, databaseID: Int64, receipts: [String], namedHashes: [String]
    ) throws -> AssetContext {
        var context = AssetContext(database: database)
        for receipt in receipts {
            if let row = try Row.fetchOne(
                db, sql: "SELECT \(uploadColumns) FROM asset_uploads u JOIN databases d ON d.id = u.db WHERE u.receipt = ?",
                arguments: [receipt]), let upload = upload(row)
            {
                context.uploads[receipt] = upload
            }
        }
        for hash in namedHashes {
            if let size = try Int64.fetchOne(
                db, sql: "SELECT size FROM assets WHERE db = ? AND sha256 = ?", arguments: [databaseID, hash])
            {
                context.known[hash] = size
            }
        }
        return context
    }

    /// Spends the plan's receipts and keeps `asset_refs` in step with the written rows
    /// (``AssetReferences/replacements(in:)``). Returns the change of the database's counted
    /// asset bytes, measured over the hashes whose references change.
    static func writeAssetChanges(_ db: Database, database: Int64, zone: String, plan: ModifyPlan) throws -> Int64 {
        let replacements = AssetReferences.replacements(in: plan.changes)
        var touched = Set<String>()
        for (name, hashes) in replacements {
            touched.formUnion(hashes)
            touched.formUnion(
                try String.fetchAll(
                    db.cachedStatement(sql: "SELECT sha256 FROM asset_refs WHERE db = ? AND zone = ? AND record = ?"),
                    arguments: [database, zone, name]))
        }
        let hashes = Array(touched)
        let before = try countedAssetBytes(db, databaseID: database, hashes: hashes)
        for receipt in plan.spentReceipts {
            try db.execute(sql: "UPDATE asset_uploads SET used = 1 WHERE receipt = ?", arguments: [receipt])
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO assets (db, sha256, size, created_at)
                    SELECT db, sha256, size, created_at FROM asset_uploads WHERE receipt = ?
                    """,
                arguments: [receipt])
        }
        for (name, hashes) in replacements {
            try db.cachedStatement(sql: "DELETE FROM asset_refs WHERE db = ? AND zone = ? AND record = ?")
                .execute(arguments: [database, zone, name])
            for hash in hashes {
                try db.cachedStatement(
                    sql: "INSERT OR IGNORE INTO asset_refs (db, zone, record, sha256) VALUES (?, ?, ?, ?)"
                ).execute(arguments: [database, zone, name, hash])
            }
        }
        return try countedAssetBytes(db, databaseID: database, hashes: hashes) - before
    }

    static let uploadColumns = """
        u.id, d.container, d.environment, d.scope, d.owner, u.user_name, u.zone, u.record, u.record_type, u.field,
        u.created_at, u.expires_at, u.sha256, u.size, u.receipt, u.used
        """

    static func upload(_ row: Row) -> AssetUpload? {
        guard let environment = ContainerEnvironment(rawValue: row[2]), let scope = DatabaseScope(rawValue: row[3]) else {
            return nil
        }
        let sha: String? = row[12]
        let size: Int64? = row[13]
        let receipt: String? = row[14]
        var completion: AssetUpload.Completion?
        if let sha, let size, let receipt { completion = .init(sha256: sha, size: size, receipt: receipt) }
        return AssetUpload(
            id: row[0], database: DatabaseKey(container: row[1], environment: environment, scope: scope, owner: row[4]),
            userRecordName: row[5], zone: row[6], recordName: row[7], recordType: row[8], fieldName: row[9],
            createdAt: row[10], expiresAt: row[11], completion: completion, used: row[15])
    }
}

extension SQLiteStore: AssetMetadataStore {
    public func createAssetUploads(_ uploads: [AssetUpload]) async throws {
        try await pool.write { db in
            for upload in uploads {
                let (dbID, _) = try Self.ensureDatabase(db, upload.database)
                try db.execute(
                    sql: """
                        INSERT INTO asset_uploads (id, db, user_name, zone, record, record_type, field, created_at, expires_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        upload.id, dbID, upload.userRecordName, upload.zone, upload.recordName, upload.recordType,
                        upload.fieldName, upload.createdAt, upload.expiresAt,
                    ])
            }
        }
    }

    public func assetUpload(id: String) async throws -> AssetUpload? {
        try await pool.read { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.uploadColumns) FROM asset_uploads u JOIN databases d ON d.id = u.db WHERE u.id = ?",
                arguments: [id]
            ).flatMap(Self.upload)
        }
    }

    public func completeAssetUpload(id: String, _ completion: AssetUpload.Completion, now: Int64) async throws
        -> AssetUpload
    {
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE asset_uploads SET sha256 = ?, size = ?, receipt = ?
                    WHERE id = ? AND sha256 IS NULL AND expires_at > ?
                    """,
                arguments: [completion.sha256, completion.size, completion.receipt, id, now])
            guard db.changesCount == 1,
                let upload = try Row.fetchOne(
                    db,
                    sql: "SELECT \(Self.uploadColumns) FROM asset_uploads u JOIN databases d ON d.id = u.db WHERE u.id = ?",
                    arguments: [id]
                ).flatMap(Self.upload)
            else {
                throw StorageAnswers.spentUpload
            }
            // The blob is known from now on; an existing row of the same bytes is freshened so
            // the collector leaves it while the receipt may still be saved.
            try db.execute(
                sql: """
                    INSERT INTO assets (db, sha256, size, created_at)
                    SELECT db, sha256, size, ? FROM asset_uploads WHERE id = ?
                    ON CONFLICT (db, sha256) DO UPDATE SET created_at = excluded.created_at
                    """,
                arguments: [now, id])
            return upload
        }
    }

    public func assetSize(sha256: String, in database: DatabaseKey) async throws -> Int64? {
        try await pool.read { db in
            guard let dbRow = try Self.databaseRow(db, database) else { return nil }
            return try Int64.fetchOne(
                db, sql: "SELECT size FROM assets WHERE db = ? AND sha256 = ?", arguments: [dbRow.id, sha256])
        }
    }

    public func collectAssetRows(now: Int64, cutoff: Int64) async throws -> AssetSweepCandidates {
        try await pool.write { db in
            var collected = AssetSweepCandidates()
            let uploads = try String.fetchAll(db, sql: "SELECT id FROM asset_uploads WHERE expires_at <= ?", arguments: [now])
            try db.execute(sql: "DELETE FROM asset_uploads WHERE expires_at <= ?", arguments: [now])
            collected.uploads = uploads
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT a.db, a.sha256, d.container, d.environment, d.scope, d.owner
                    FROM assets a JOIN databases d ON d.id = a.db
                    WHERE a.created_at < ?
                      AND NOT EXISTS (SELECT 1 FROM asset_refs r WHERE r.db = a.db AND r.sha256 = a.sha256)
                      AND NOT EXISTS (SELECT 1 FROM asset_uploads u WHERE u.db = a.db AND u.sha256 = a.sha256 AND u.used = 0)
                    """,
                arguments: [cutoff])
            for row in rows {
                guard let environment = ContainerEnvironment(rawValue: row[3]), let scope = DatabaseScope(rawValue: row[4])
                else { continue }
                let dbID: Int64 = row[0]
                let sha: String = row[1]
                try db.execute(sql: "DELETE FROM assets WHERE db = ? AND sha256 = ?", arguments: [dbID, sha])
                let key = DatabaseKey(container: row[2], environment: environment, scope: scope, owner: row[5])
                collected.blobs.append(AssetBlobKey(database: key, sha256: sha))
            }
            return collected
        }
    }

    public func unknownAssetFiles(_ candidates: AssetSweepCandidates) async throws -> AssetSweepCandidates {
        try await pool.read { db in
            var known = Set<String>()
            for row in try Row.fetchAll(
                db, sql: "SELECT a.sha256, d.container, d.environment, d.scope, d.owner FROM assets a JOIN databases d ON d.id = a.db")
            {
                guard let environment = ContainerEnvironment(rawValue: row[2]), let scope = DatabaseScope(rawValue: row[3])
                else { continue }
                let key = DatabaseKey(container: row[1], environment: environment, scope: scope, owner: row[4])
                known.insert(AssetBlobKey(database: key, sha256: row[0]).description)
            }
            var unknown = AssetSweepCandidates()
            unknown.blobs = candidates.blobs.filter { !known.contains($0.description) }
            for id in candidates.uploads {
                let pending = try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM asset_uploads WHERE id = ? AND sha256 IS NULL", arguments: [id]) ?? false
                if !pending { unknown.uploads.append(id) }
            }
            return unknown
        }
    }
}
