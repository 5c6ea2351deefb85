import NimbusProtocol
import NimbusStore
import PostgresNIO

extension PostgresStore {
    /// Schema v9: asset rows, reference rows and upload rows (as SQLite's `v7-assets`), and
    /// `asset_chunks`, the bytes of uploads and blobs in chunks of at most 1 MiB
    /// (``PostgresAssetStore``), which every node reads. Written to be run again over itself
    /// (`IF NOT EXISTS`), as a database whose recorded versions were rolled back needs.
    static let assetsSchema = [
        """
        CREATE TABLE IF NOT EXISTS assets (
            db bigint NOT NULL,
            sha256 text COLLATE "C" NOT NULL,
            size bigint NOT NULL,
            created_at bigint NOT NULL,
            PRIMARY KEY (db, sha256)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS asset_refs (
            db bigint NOT NULL,
            zone text COLLATE "C" NOT NULL,
            record text COLLATE "C" NOT NULL,
            sha256 text COLLATE "C" NOT NULL,
            PRIMARY KEY (db, zone, record, sha256)
        )
        """,
        "CREATE INDEX IF NOT EXISTS asset_refs_by_asset ON asset_refs (db, sha256)",
        """
        CREATE TABLE IF NOT EXISTS asset_uploads (
            id text COLLATE "C" PRIMARY KEY,
            db bigint NOT NULL,
            user_name text NOT NULL,
            zone text NOT NULL,
            record text NOT NULL,
            record_type text,
            field text NOT NULL,
            created_at bigint NOT NULL,
            expires_at bigint NOT NULL,
            sha256 text COLLATE "C",
            size bigint,
            receipt text COLLATE "C" UNIQUE,
            used boolean NOT NULL DEFAULT false
        )
        """,
        "CREATE INDEX IF NOT EXISTS asset_uploads_by_expiry ON asset_uploads (expires_at)",
        "CREATE INDEX IF NOT EXISTS asset_uploads_by_asset ON asset_uploads (db, sha256)",
        """
        CREATE TABLE IF NOT EXISTS asset_chunks (
            blob text COLLATE "C" NOT NULL,
            start bigint NOT NULL,
            bytes bytea NOT NULL,
            written_at bigint NOT NULL,
            PRIMARY KEY (blob, start)
        )
        """,
    ]

    static let uploadColumns = """
        u.id, d.container, d.environment, d.scope, d.owner, u.user_name, u.zone, u.record, u.record_type, u.field,
        u.created_at, u.expires_at, u.sha256, u.size, u.receipt, u.used
        """

    static func upload(_ row: PostgresRow) throws -> AssetUpload? {
        var columns = ColumnReader(row)
        let id: String = try columns.next()
        let container: String = try columns.next()
        guard let environment = ContainerEnvironment(rawValue: try columns.next()),
            let scope = DatabaseScope(rawValue: try columns.next())
        else { return nil }
        let owner: String = try columns.next()
        let user: String = try columns.next()
        let zone: String = try columns.next()
        let record: String = try columns.next()
        let recordType: String? = try columns.next()
        let field: String = try columns.next()
        let createdAt: Int64 = try columns.next()
        let expiresAt: Int64 = try columns.next()
        let sha: String? = try columns.next()
        let size: Int64? = try columns.next()
        let receipt: String? = try columns.next()
        let used: Bool = try columns.next()
        var completion: AssetUpload.Completion?
        if let sha, let size, let receipt { completion = .init(sha256: sha, size: size, receipt: receipt) }
        return AssetUpload(
            id: id, database: DatabaseKey(container: container, environment: environment, scope: scope, owner: owner),
            userRecordName: user, zone: zone, recordName: record, recordType: recordType, fieldName: field,
            createdAt: createdAt, expiresAt: expiresAt, completion: completion, used: used)
    }

    /// The asset context of a modify, read after the database's row lock is taken.
    func assetContext(
        _ transaction: Transaction, database: DatabaseKey, databaseID: Int64, receipts: [String], namedHashes hashes: [String]
    ) async throws -> AssetContext {
        var context = AssetContext(database: database)
        if !receipts.isEmpty {
            for row in try await transaction.rows(
                """
                SELECT \(unescaped: Self.uploadColumns) FROM asset_uploads u JOIN databases d ON d.id = u.db
                WHERE u.receipt = ANY(\(receipts)) FOR UPDATE OF u
                """)
            {
                if let upload = try Self.upload(row), let receipt = upload.completion?.receipt {
                    context.uploads[receipt] = upload
                }
            }
        }
        if !hashes.isEmpty {
            for row in try await transaction.rows(
                "SELECT sha256, size FROM assets WHERE db = \(databaseID) AND sha256 = ANY(\(hashes))")
            {
                let (hash, size) = try row.decode((String, Int64).self)
                context.known[hash] = size
            }
        }
        return context
    }

    /// Spends the plan's receipts and keeps `asset_refs` in step with the written rows
    /// (``AssetReferences/replacements(in:)``). When it replaced references, returns the
    /// change of the database's counted asset bytes (measured over the hashes whose
    /// references changed) and the usage counter with it added.
    func writeAssetChanges(_ transaction: Transaction, database: Int64, zone: String, plan: ModifyPlan) async throws
        -> (assetBytes: Int64, usage: DatabaseUsage)?
    {
        let replacements = AssetReferences.replacements(in: plan.changes)
        let cleared = Array(replacements.keys)
        var records: [String] = []
        var hashes: [String] = []
        for (name, referenced) in replacements {
            for hash in referenced {
                records.append(name)
                hashes.append(hash)
            }
        }
        var counted: (hashes: [String], bytes: Int64) = ([], 0)
        if !cleared.isEmpty {
            counted = try await countedAssets(
                transaction, database: database, zone: zone, records: cleared, hashes: Array(Set(hashes)))
        }
        if !plan.spentReceipts.isEmpty {
            try await transaction.rows(
                """
                WITH spent AS (
                    UPDATE asset_uploads SET used = true WHERE receipt = ANY(\(plan.spentReceipts))
                    RETURNING db, sha256, size, created_at)
                INSERT INTO assets (db, sha256, size, created_at) SELECT * FROM spent ON CONFLICT DO NOTHING
                """)
        }
        guard !cleared.isEmpty else { return nil }
        try await transaction.rows(
            "DELETE FROM asset_refs WHERE db = \(database) AND zone = \(zone) AND record = ANY(\(cleared))")
        if !records.isEmpty {
            try await transaction.rows(
                """
                INSERT INTO asset_refs (db, zone, record, sha256)
                SELECT \(database), \(zone), t.record, t.sha256 FROM unnest(\(records)::text[], \(hashes)::text[]) AS t(record, sha256)
                ON CONFLICT DO NOTHING
                """)
        }
        guard !counted.hashes.isEmpty else { return nil }
        return try await addAssetUsage(transaction, database: database, hashes: counted.hashes, before: counted.bytes)
    }
}

extension PostgresStore: AssetMetadataStore {
    public func createAssetUploads(_ uploads: [AssetUpload]) async throws {
        try await transaction { transaction in
            var ids: [String: Int64] = [:]
            for upload in uploads {
                let dbID: Int64
                if let known = ids[upload.database.description] {
                    dbID = known
                } else {
                    dbID = try await lockDatabase(transaction, upload.database, bump: false).id
                    ids[upload.database.description] = dbID
                }
                try await transaction.rows(
                    """
                    INSERT INTO asset_uploads (id, db, user_name, zone, record, record_type, field, created_at, expires_at)
                    VALUES (\(upload.id), \(dbID), \(upload.userRecordName), \(upload.zone), \(upload.recordName),
                        \(upload.recordType), \(upload.fieldName), \(upload.createdAt), \(upload.expiresAt))
                    """)
            }
        }
    }

    public func assetUpload(id: String) async throws -> AssetUpload? {
        try await rows(
            "SELECT \(unescaped: Self.uploadColumns) FROM asset_uploads u JOIN databases d ON d.id = u.db WHERE u.id = \(id)"
        ).first.flatMap { try Self.upload($0) }
    }

    public func completeAssetUpload(id: String, _ completion: AssetUpload.Completion, now: Int64) async throws
        -> AssetUpload
    {
        try await transaction { transaction in
            let updated = try await transaction.rows(
                """
                UPDATE asset_uploads SET sha256 = \(completion.sha256), size = \(completion.size), receipt = \(completion.receipt)
                WHERE id = \(id) AND sha256 IS NULL AND expires_at > \(now) RETURNING db
                """)
            guard let dbID = try updated.first?.decode(Int64.self) else {
                throw StorageAnswers.spentUpload
            }
            try await transaction.rows(
                """
                INSERT INTO assets (db, sha256, size, created_at) VALUES (\(dbID), \(completion.sha256), \(completion.size), \(now))
                ON CONFLICT (db, sha256) DO UPDATE SET created_at = EXCLUDED.created_at
                """)
            guard
                let upload = try await transaction.rows(
                    "SELECT \(unescaped: Self.uploadColumns) FROM asset_uploads u JOIN databases d ON d.id = u.db WHERE u.id = \(id)"
                ).first.flatMap({ try Self.upload($0) })
            else { throw PostgresStoreError(.corruptRow, "upload \(id) vanished while it was completed") }
            return upload
        }
    }

    public func assetSize(sha256: String, in database: DatabaseKey) async throws -> Int64? {
        try await rows(
            """
            SELECT a.size FROM assets a JOIN databases d ON d.id = a.db
            WHERE \(database: database) AND a.sha256 = \(sha256)
            """
        ).first?.decode(Int64.self)
    }

    /// Each database's unreferenced assets are deleted under its row lock, the lock every
    /// modify holds while it adds references: a save never attaches an asset being deleted.
    public func collectAssetRows(now: Int64, cutoff: Int64) async throws -> AssetSweepCandidates {
        var collected = AssetSweepCandidates()
        for row in try await rows("DELETE FROM asset_uploads WHERE expires_at <= \(now) RETURNING id") {
            collected.uploads.append(try row.decode(String.self))
        }
        let candidates = try await rows(
            """
            SELECT DISTINCT a.db, d.container, d.environment, d.scope, d.owner FROM assets a JOIN databases d ON d.id = a.db
            WHERE a.created_at < \(cutoff)
              AND NOT EXISTS (SELECT 1 FROM asset_refs r WHERE r.db = a.db AND r.sha256 = a.sha256)
            """)
        for candidate in candidates {
            let (dbID, container, environmentName, scopeName, owner) = try candidate.decode(
                (Int64, String, String, String, String).self)
            guard let environment = ContainerEnvironment(rawValue: environmentName),
                let scope = DatabaseScope(rawValue: scopeName)
            else { continue }
            let key = DatabaseKey(container: container, environment: environment, scope: scope, owner: owner)
            let deleted = try await transaction { transaction in
                _ = try await lockDatabase(transaction, key, bump: false)
                return try await transaction.rows(
                    """
                    DELETE FROM assets a WHERE a.db = \(dbID) AND a.created_at < \(cutoff)
                      AND NOT EXISTS (SELECT 1 FROM asset_refs r WHERE r.db = a.db AND r.sha256 = a.sha256)
                      AND NOT EXISTS (
                          SELECT 1 FROM asset_uploads u WHERE u.db = a.db AND u.sha256 = a.sha256 AND NOT u.used)
                    RETURNING a.sha256
                    """)
            }
            for row in deleted { collected.blobs.append(AssetBlobKey(database: key, sha256: try row.decode(String.self))) }
        }
        return collected
    }

    public func unknownAssetFiles(_ candidates: AssetSweepCandidates) async throws -> AssetSweepCandidates {
        var known = Set<String>()
        for row in try await rows(
            "SELECT a.sha256, d.container, d.environment, d.scope, d.owner FROM assets a JOIN databases d ON d.id = a.db")
        {
            let (sha, container, environmentName, scopeName, owner) = try row.decode((String, String, String, String, String).self)
            guard let environment = ContainerEnvironment(rawValue: environmentName),
                let scope = DatabaseScope(rawValue: scopeName)
            else { continue }
            let key = DatabaseKey(container: container, environment: environment, scope: scope, owner: owner)
            known.insert(AssetBlobKey(database: key, sha256: sha).description)
        }
        var pending = Set<String>()
        if !candidates.uploads.isEmpty {
            for row in try await rows(
                "SELECT id FROM asset_uploads WHERE id = ANY(\(candidates.uploads)) AND sha256 IS NULL")
            {
                pending.insert(try row.decode(String.self))
            }
        }
        return AssetSweepCandidates(
            blobs: candidates.blobs.filter { !known.contains($0.description) },
            uploads: candidates.uploads.filter { !pending.contains($0) })
    }
}
