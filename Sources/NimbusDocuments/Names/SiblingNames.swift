/// The local names of one folder's children: each child's true name made portable
/// (``PortableName``), and children whose names collide (``NameKey``) told apart by a suffix,
/// the same way on every device.
///
/// In each group of colliding names, the child with the smallest record name keeps the name;
/// the others, in record-name order, get `" 2"`, `" 3"`, … before the extension (as the Finder
/// names a copy), skipping any name another child holds. The result depends only on the set
/// of children, never on the order they arrived in, so every device writes the same files.
///
/// ```swift
/// let names = SiblingNames.assign([
///     .init(recordName: "b", name: "Notes.txt"),
///     .init(recordName: "a", name: "notes.TXT"),
/// ])
/// // ["a": "notes.TXT", "b": "Notes 2.txt"]
/// ```
public enum SiblingNames {
    /// A child of a folder: its record name and its true name.
    public struct Child: Hashable, Sendable {
        public var recordName: String
        public var name: String

        public init(recordName: String, name: String) {
            self.recordName = recordName
            self.name = name
        }
    }

    /// Each child's local name, by record name. No two local names collide.
    public static func assign(_ children: [Child]) -> [String: String] {
        let sorted = children.sorted { $0.recordName < $1.recordName }
        let candidates: [(child: Child, local: String, key: NameKey)] = sorted.map { child in
            let local = PortableName.localName(for: child.name)
            return (child, local, NameKey(local))
        }
        // Winners first: the first child (by record name) of each key keeps its name, so no
        // suffixed loser can take a name a winner wants.
        var taken = Set<NameKey>()
        var result: [String: String] = [:]
        var losers: [Int] = []
        for (index, candidate) in candidates.enumerated() {
            if taken.insert(candidate.key).inserted {
                result[candidate.child.recordName] = candidate.local
            } else {
                losers.append(index)
            }
        }
        for index in losers {
            let candidate = candidates[index]
            var number = 2
            while true {
                let local = PortableName.fitted(
                    NameParts.adding(" \(number)", to: candidate.local), trueName: candidate.child.name + " \(number)")
                let key = NameKey(local)
                if taken.insert(key).inserted {
                    result[candidate.child.recordName] = local
                    break
                }
                number += 1
            }
        }
        return result
    }
}
