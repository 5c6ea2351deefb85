import Crypto
import Foundation

/// Reading a file's bytes in chunks (never whole in memory): its SHA-256, and a copy of it
/// taken while it holds still.
public enum FileContent {
    static let chunkBytes = 1 << 20

    /// The lowercase hex SHA-256 of the file at `url`.
    public static func sha256(of url: URL) throws -> String {
        try copying(url, to: nil)
    }

    /// Copies `source` to `destination` (created or replaced), chunk by chunk; returns the
    /// bytes' SHA-256.
    public static func copy(_ source: URL, to destination: URL) throws -> String {
        try copying(source, to: destination)
    }

    /// Copies `source` to `destination` (created or replaced), chunk by chunk, hashing what
    /// it copies. Returns the bytes' SHA-256, or `nil` when the file changed while being
    /// read (its size, time or inode moved): then nothing is kept, and the caller tries again
    /// at the next scan.
    public static func snapshot(_ source: URL, to destination: URL, reader: FolderReader, path: DocumentPath) throws -> String? {
        let before = reader.entry(at: path)
        let sha: String
        do {
            sha = try copying(source, to: destination)
        } catch {
            try? FileManager.default.removeItem(at: destination)
            return nil
        }
        guard let before, before == reader.entry(at: path) else {
            try? FileManager.default.removeItem(at: destination)
            return nil
        }
        return sha
    }

    /// The SHA-256 of the file at `path` in the folder, or `nil` if it changed while read.
    public static func stableHash(reader: FolderReader, path: DocumentPath) -> String? {
        let before = reader.entry(at: path)
        guard let sha = try? sha256(of: reader.url(of: path)), let before, before == reader.entry(at: path) else { return nil }
        return sha
    }

    private static func copying(_ source: URL, to destination: URL?) throws -> String {
        let input = try FileHandle(forReadingFrom: source)
        defer { try? input.close() }
        var output: FileHandle?
        if let destination {
            _ = FileManager.default.createFile(atPath: destination.path, contents: nil)
            output = try FileHandle(forWritingTo: destination)
        }
        defer { try? output?.close() }
        var hasher = SHA256()
        while let chunk = try input.read(upToCount: chunkBytes), !chunk.isEmpty {
            hasher.update(data: chunk)
            try output?.write(contentsOf: chunk)
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
