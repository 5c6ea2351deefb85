/// Where each document and folder goes on disk: its folder chain, each name made local by
/// ``SiblingNames``. Pure; the same records give the same layout on every device.
///
/// A record whose folder is missing, is not a folder, or is part of a cycle (two devices moved
/// two folders into each other at once) is placed at the root, so nothing disappears.
public struct TreeLayout: Sendable {
    /// The local path of each record, by record name.
    public let paths: [String: DocumentPath]
    /// The record at each local path, by ``NameKey`` of each component (case- and
    /// normalisation-insensitive, as a path on a case-insensitive disk).
    public let records: [[NameKey]: String]

    public init(_ documents: [DocumentRecord]) {
        let byName = Dictionary(documents.map { ($0.recordName, $0) }, uniquingKeysWith: { first, _ in first })
        // The folder each record really sits in: its own, unless that is missing, a file, or
        // leads back to the record (a cycle).
        var container: [String: String?] = [:]
        for document in documents {
            container[document.recordName] = Self.validFolder(of: document, in: byName)
        }
        var children: [String?: [SiblingNames.Child]] = [:]
        for document in documents {
            children[container[document.recordName] ?? nil, default: []].append(
                SiblingNames.Child(recordName: document.recordName, name: document.name))
        }
        var localNames: [String: String] = [:]
        for (_, siblings) in children {
            localNames.merge(SiblingNames.assign(siblings)) { first, _ in first }
        }
        var paths: [String: DocumentPath] = [:]
        func path(of name: String) -> DocumentPath {
            if let known = paths[name] { return known }
            let parent = (container[name] ?? nil).map(path(of:)) ?? .root
            let result = DocumentPath(checked: parent.components + [localNames[name] ?? "_"])
            paths[name] = result
            return result
        }
        for document in documents { _ = path(of: document.recordName) }
        self.paths = paths
        var records: [[NameKey]: String] = [:]
        for (name, path) in paths { records[path.components.map(NameKey.init)] = name }
        self.records = records
    }

    /// The record at `path` on a case-insensitive reading of it.
    public func record(at path: DocumentPath) -> String? {
        records[path.components.map(NameKey.init)]
    }

    /// The folder `document` sits in: `nil` (the root) when its folder is missing, is a file,
    /// or when following folders up from it comes back to it.
    static func validFolder(of document: DocumentRecord, in byName: [String: DocumentRecord]) -> String? {
        guard let folder = document.folder, let parent = byName[folder], parent.kind == .folder else { return nil }
        var seen: Set<String> = [document.recordName]
        var current: DocumentRecord? = parent
        while let step = current {
            if !seen.insert(step.recordName).inserted {
                // A cycle: the member with the smallest record name goes to the root and so
                // breaks it for every member, the same way on every device.
                let cycle = Self.cycle(from: step.recordName, in: byName)
                return cycle.min() == document.recordName ? nil : folder
            }
            guard let next = step.folder, let nextRecord = byName[next], nextRecord.kind == .folder else { return folder }
            current = nextRecord
        }
        return folder
    }

    /// The record names of the cycle through `start`.
    static func cycle(from start: String, in byName: [String: DocumentRecord]) -> [String] {
        var members = [start]
        var current = byName[start]?.folder
        while let name = current, name != start {
            members.append(name)
            current = byName[name]?.folder
        }
        return members
    }
}
