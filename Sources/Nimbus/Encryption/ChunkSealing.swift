import Crypto
import Foundation
import NimbusCrypto

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Android)
import Android
#endif

/// What identifies a file's content cheaply: its length and modification time. A file whose
/// stamp changed while it was sealed is ``NimbusError/Code/assetFileModified``.
struct FileStamp: Equatable, Sendable {
    var size: Int64
    var modified: Date?

    init(_ file: URL) throws {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: file.path),
            let size = (attributes[.size] as? NSNumber)?.int64Value
        else {
            throw NimbusError(.assetFileNotFound, "the asset's file \(file.path) does not exist or cannot be read")
        }
        self.size = size
        self.modified = attributes[.modificationDate] as? Date
    }
}

/// One run of whole chunks of a file, sealed (``AssetChunks``), or only their keys.
struct SealedBlock: Sendable {
    /// Each chunk's ciphertext and tag, in order, as the sealed boxes hold them (none with
    /// `keysOnly`): sent as they are, never copied into one buffer.
    var pieces: [Data]
    var keys: [UInt8]

    /// Chunks `chunks` of `file`, read and sealed (their keys only with `keysOnly`): the
    /// second half by a child task while this one does the first. The plaintext is read into
    /// a buffer of `buffers`, given back afterwards.
    static func make(
        _ file: URL, chunks: Range<Int>, layout: AssetChunks.Layout, secrets: AssetChunks.Secrets, keysOnly: Bool,
        buffers: RunBuffers
    ) async throws -> SealedBlock {
        let start = Int64(chunks.lowerBound) * Int64(layout.chunkSize)
        let count = Int(min(Int64(chunks.count) * Int64(layout.chunkSize), layout.plaintextSize - start))
        var buffer = await buffers.take()
        try read(file, from: start, count: count, into: &buffer)
        let block = try await seal(buffer, chunks: chunks, layout: layout, secrets: secrets, keysOnly: keysOnly)
        await buffers.give(buffer)
        return block
    }

    /// ``make(_:chunks:layout:secrets:keysOnly:buffers:)``'s sealing, on two lanes.
    private static func seal(
        _ plain: [UInt8], chunks: Range<Int>, layout: AssetChunks.Layout, secrets: AssetChunks.Secrets, keysOnly: Bool
    ) async throws -> SealedBlock {
        let half = chunks.lowerBound + (chunks.count + 1) / 2
        async let second = seal(plain, chunks: half..<chunks.upperBound, first: chunks.lowerBound, layout, secrets, keysOnly)
        let first = try seal(plain, chunks: chunks.lowerBound..<half, first: chunks.lowerBound, layout, secrets, keysOnly)
        let rest = try await second
        return SealedBlock(pieces: first.pieces + rest.pieces, keys: first.keys + rest.keys)
    }

    private static func seal(
        _ plain: [UInt8], chunks: Range<Int>, first: Int, _ layout: AssetChunks.Layout, _ secrets: AssetChunks.Secrets,
        _ keysOnly: Bool
    ) throws -> SealedBlock {
        var block = SealedBlock(pieces: [], keys: [])
        block.keys.reserveCapacity(chunks.count * AssetChunks.keyByteCount)
        if !keysOnly { block.pieces.reserveCapacity(chunks.count) }
        for index in chunks {
            let offset = (index - first) * layout.chunkSize
            let chunk = plain[offset..<offset + layout.plainCount(of: index)]
            if keysOnly {
                block.keys += AssetChunks.chunkKey(
                    chunk, index: index, final: layout.isFinal(index), chunkSize: layout.chunkSize, secrets: secrets)
            } else {
                let (sealed, key) = try AssetChunks.sealChunk(
                    chunk, index: index, final: layout.isFinal(index), chunkSize: layout.chunkSize, secrets: secrets)
                block.pieces.append(sealed)
                block.keys += key
            }
        }
        return block
    }

    /// Exactly `count` bytes of `file` from `start`, read into the front of `buffer` (grown
    /// when smaller).
    private static func read(_ file: URL, from start: Int64, count: Int, into buffer: inout [UInt8]) throws {
        guard let handle = try? FileHandle(forReadingFrom: file) else {
            throw NimbusError(.assetFileNotFound, "the asset's file \(file.path) cannot be opened for reading")
        }
        defer { try? handle.close() }
        if buffer.count < count { buffer = [UInt8](repeating: 0, count: count) }
        let descriptor = handle.fileDescriptor
        var done = 0
        var failure: Int32 = 0
        buffer.withUnsafeMutableBytes { raw in
            while done < count {
                let read = pread(descriptor, raw.baseAddress! + done, count - done, off_t(start + Int64(done)))
                if read > 0 {
                    done += read
                } else if read < 0, errno == EINTR {
                    continue
                } else {
                    failure = read < 0 ? errno : 0
                    return
                }
            }
        }
        guard done == count else {
            if failure != 0 {
                throw NimbusError(.assetFileNotFound, "the asset's file \(file.path) could not be read (errno \(failure))")
            }
            throw NimbusError(
                .assetFileModified, "the asset's file \(file.path) became shorter while it was encrypted; save the record again")
        }
    }
}

/// The plaintext buffers of a file's sealing runs, used again run after run: a fresh megabyte
/// a run faulted its pages in each time (28 ms of CPU per 50 MB in a profile, more than the
/// AES-GCM itself).
actor RunBuffers {
    private var spare: [UInt8] = []

    /// A buffer no one else holds (empty the first time).
    func take() -> [UInt8] {
        defer { spare = [] }
        return spare
    }

    /// Keeps `buffer` for the next run.
    func give(_ buffer: [UInt8]) { spare = buffer }
}

/// The ciphertext of a file (``AssetChunks``), made as an upload sends it: one streamed pass
/// that hashes and seals each run of chunks (the next run sealed while this one is sent),
/// then the key table. Starts at ciphertext offset `start` (a resumed upload): the chunks
/// before it are only hashed, for their keys.
final class ChunkSealingSource: AssetBodySource {
    /// How many chunks one run holds (about ``AssetFileSealing/blockBytes`` of plaintext).
    static func runLength(_ layout: AssetChunks.Layout) -> Int { max(2, AssetFileSealing.blockBytes / layout.chunkSize) }

    let file: URL
    let layout: AssetChunks.Layout
    let secrets: AssetChunks.Secrets
    let stamp: FileStamp
    let start: Int64
    /// Receives the table key once the table is sealed.
    let tableKey: TableKeyBox
    private var position: Int64 = 0
    private var upcoming = 0
    private var pending: Task<SealedBlock, any Error>?
    /// The sealed chunks of the run being sent, not sent yet.
    private var ready: ArraySlice<Data> = []
    private var keys: [UInt8] = []
    private var finished = false
    private let buffers = RunBuffers()

    init(file: URL, layout: AssetChunks.Layout, secrets: AssetChunks.Secrets, stamp: FileStamp, start: Int64, tableKey: TableKeyBox) {
        self.file = file
        self.layout = layout
        self.secrets = secrets
        self.stamp = stamp
        self.start = start
        self.tableKey = tableKey
        keys.reserveCapacity(layout.chunkCount * AssetChunks.keyByteCount)
    }

    deinit { pending?.cancel() }

    func next() async throws -> Data? {
        if position == 0 {
            position = Int64(AssetChunks.headerByteCount)
            if start < position { return Data(layout.header[Int(start)...]) }
        }
        while true {
            if let piece = ready.popFirst() {
                let skip = max(0, start - position)
                position += Int64(piece.count)
                if position > start { return piece.dropFirst(Int(skip)) }
                continue
            }
            guard let task = pending ?? startRun() else { break }
            pending = nil
            let run = try await task.value
            keys += run.keys
            pending = startRun()
            if run.pieces.isEmpty {
                // Keys only: chunks the server holds already.
                position = layout.chunkOffset(keys.count / AssetChunks.keyByteCount)
            } else {
                ready = run.pieces[...]
            }
        }
        guard !finished else { return nil }
        finished = true
        guard try FileStamp(file) == stamp else {
            throw NimbusError(.assetFileModified, "the asset's file \(file.path) changed while it was encrypted; save the record again")
        }
        let (key, table) = try AssetChunks.sealTable(keys, layout: layout, secrets: secrets)
        await tableKey.set(key)
        return Data(table[Int(max(0, start - position))...])
    }

    /// Starts sealing the next run of chunks (only their keys when the upload resumes after
    /// them), or `nil` after the last.
    private func startRun() -> Task<SealedBlock, any Error>? {
        guard upcoming < layout.chunkCount else { return nil }
        let chunks = upcoming..<min(layout.chunkCount, upcoming + Self.runLength(layout))
        upcoming = chunks.upperBound
        let keysOnly = layout.chunkOffset(chunks.upperBound) <= start
        let (file, layout, secrets, buffers) = (file, layout, secrets, buffers)
        return Task {
            try await SealedBlock.make(file, chunks: chunks, layout: layout, secrets: secrets, keysOnly: keysOnly, buffers: buffers)
        }
    }

    /// The table key of `file` without sealing it: the chunk keys only (an upload the server
    /// had finished before this run asked).
    static func tableKey(of file: URL, layout: AssetChunks.Layout, secrets: AssetChunks.Secrets) async throws -> SymmetricKey {
        var keys: [UInt8] = []
        var next = 0
        let buffers = RunBuffers()
        while next < layout.chunkCount {
            let chunks = next..<min(layout.chunkCount, next + runLength(layout))
            keys += try await SealedBlock.make(file, chunks: chunks, layout: layout, secrets: secrets, keysOnly: true, buffers: buffers).keys
            next = chunks.upperBound
        }
        return try AssetChunks.sealTable(keys, layout: layout, secrets: secrets).tableKey
    }
}

/// Where a sealing run leaves its table key.
actor TableKeyBox {
    private(set) var key: SymmetricKey?

    func set(_ key: SymmetricKey) { self.key = key }
}

/// Opens a version 2 or 3 ciphertext's chunks as a download hands them over, straight into the
/// target file: whole runs of chunks at a time, each run opened (on two cores) while the next
/// one arrives, and written in order.
struct ChunkOpener {
    let layout: AssetChunks.Layout
    /// The key table: 32 bytes per chunk.
    let keys: [UInt8]
    let writer: AssetFile.Writer
    /// The chunk the next bytes start.
    private(set) var index: Int
    private var buffer: [UInt8] = []
    /// The run being opened, not yet written.
    private var pending: Task<[UInt8], any Error>?

    init(layout: AssetChunks.Layout, keys: [UInt8], writer: AssetFile.Writer, firstChunk: Int) {
        self.layout = layout
        self.keys = keys
        self.writer = writer
        self.index = firstChunk
        buffer.reserveCapacity(ChunkSealingSource.runLength(layout) * layout.sealedChunkSize)
    }

    /// Takes the next bytes of the chunks' region; starts opening every run it completes.
    mutating func receive(_ bytes: Data) async throws {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let wanted = runBytes() - buffer.count
            guard wanted > 0 else {
                throw NimbusError(.decryptionFailed, "the encrypted file is longer than its chunks: it was padded")
            }
            let take = min(wanted, bytes.endIndex - offset)
            buffer += bytes[offset..<offset + take]
            offset += take
            if buffer.count == runBytes() { try await openRun() }
        }
    }

    /// Writes the last run opened; whether every chunk arrived.
    mutating func finish() async throws -> Bool {
        if let pending { try writer.write(try await pending.value) }
        pending = nil
        return index == layout.chunkCount && buffer.isEmpty
    }

    /// The sealed length of the run that starts at `index`.
    private func runBytes() -> Int {
        let end = min(layout.chunkCount, index + ChunkSealingSource.runLength(layout))
        return Int(layout.chunkOffset(end) - layout.chunkOffset(index))
    }

    private mutating func openRun() async throws {
        let count = min(layout.chunkCount, index + ChunkSealingSource.runLength(layout)) - index
        let half = (count + 1) / 2
        let (sealed, first, layout, keys) = (buffer, index, layout, keys)
        let run = Task {
            async let second = Self.open(sealed, chunks: first + half..<first + count, first: first, layout, keys)
            let opened = try Self.open(sealed, chunks: first..<first + half, first: first, layout, keys)
            return opened + (try await second)
        }
        if let pending { try writer.write(try await pending.value) }
        pending = run
        index += count
        buffer.removeAll(keepingCapacity: true)
    }

    private static func open(
        _ sealed: [UInt8], chunks: Range<Int>, first: Int, _ layout: AssetChunks.Layout, _ keys: [UInt8]
    ) throws -> [UInt8] {
        var opened: [UInt8] = []
        opened.reserveCapacity(chunks.count * layout.chunkSize)
        let base = layout.chunkOffset(first)
        do {
            for index in chunks {
                let start = Int(layout.chunkOffset(index) - base)
                try AssetChunks.openChunk(
                    sealed[start..<start + layout.plainCount(of: index) + AssetChunks.tagByteCount], index: index, layout: layout,
                    key: keys[index * AssetChunks.keyByteCount..<(index + 1) * AssetChunks.keyByteCount], appendingTo: &opened)
            }
        } catch {
            throw NimbusError(.decryptionFailed, "the asset's bytes do not open: \(error.message)")
        }
        return opened
    }
}
