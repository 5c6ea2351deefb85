import Foundation

/// The documents bench's folders, its copies and its clock.
extension DocumentsBench {
    /// `count` files of `bytes` random bytes each, in ten subfolders of `<directory>/small`.
    static func makeSmallFiles(count: Int, bytes: Int, in directory: URL) throws -> URL {
        let root = directory.appendingPathComponent("small")
        var generator = SystemRandomNumberGenerator()
        for index in 0..<count {
            let folder = root.appendingPathComponent("folder-\(index % 10)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let content = Data((0..<bytes).map { _ in UInt8.random(in: 0...255, using: &generator) })
            try content.write(to: folder.appendingPathComponent("file-\(index).bin"))
        }
        return root
    }

    /// One file of `bytes` random bytes in `<directory>/large`, written in 1 MB pieces.
    static func makeLargeFile(bytes: Int, in directory: URL) throws -> URL {
        let root = directory.appendingPathComponent("large")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let file = root.appendingPathComponent("large.bin")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        let handle = try FileHandle(forWritingTo: file)
        defer { try? handle.close() }
        var generator = SystemRandomNumberGenerator()
        var written = 0
        while written < bytes {
            let count = min(1 << 20, bytes - written)
            var piece = [UInt64](repeating: 0, count: (count + 7) / 8)
            for index in piece.indices { piece[index] = generator.next() }
            try handle.write(contentsOf: piece.withUnsafeBytes { Data($0.prefix(count)) })
            written += count
        }
        return root
    }

    /// The sum of the sizes of the files below `root` (hidden names left out: the library's own).
    static func fileBytes(in root: URL) -> Int64 {
        guard let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.fileSizeKey]) else { return 0 }
        var total: Int64 = 0
        for case let url as URL in enumerator where !url.lastPathComponent.hasPrefix(".") {
            total += Int64((try? url.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0)
        }
        return total
    }

    /// `cp -R source target`: the local copy the first sync is measured against.
    static func copyFolder(_ source: URL, to target: URL) throws {
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/cp")
        process.arguments = ["-R", source.path, target.path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("cp -R \(source.path) failed") }
    }

    static func timed(_ body: () throws -> Void) throws -> Double {
        let started = ContinuousClock.now
        try body()
        return (ContinuousClock.now - started).seconds
    }

    static func timed(_ body: () async throws -> Void) async throws -> Double {
        let started = ContinuousClock.now
        try await body()
        return (ContinuousClock.now - started).seconds
    }

    /// Runs `body` until it returns, or throws after `timeout`.
    static func within(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await body()
                return true
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return false
            }
            let finished = try await group.next() ?? false
            group.cancelAll()
            guard finished else { throw BenchError("nothing arrived within \(timeout)") }
        }
    }
}
