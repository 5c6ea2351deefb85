import NimbusDocuments
import Testing

/// Where records go on disk: folder chains, collisions, and what must never vanish.
@Suite struct TreeLayoutTests {
    static func folder(_ name: String, _ record: String, in parent: String? = nil) -> DocumentRecord {
        DocumentRecord(recordName: record, kind: .folder, name: name, folder: parent)
    }
    static func file(_ name: String, _ record: String, in parent: String? = nil) -> DocumentRecord {
        DocumentRecord(recordName: record, kind: .file, name: name, folder: parent)
    }

    @Test func pathsFollowFoldersWithLocalNames() throws {
        let layout = TreeLayout([
            Self.folder("Work", "w"), Self.folder("a:b", "ab", in: "w"), Self.file("CON.txt", "f", in: "ab"),
        ])
        #expect(layout.paths["f"]?.components == ["Work", "a\u{F022}b", "CON_.txt"])
        #expect(try layout.record(at: DocumentPath("work/A\u{F022}B/con_.TXT")) == "f")
    }

    @Test func orphansAndFilesAsFoldersGoToTheRoot() {
        let layout = TreeLayout([Self.file("lost.txt", "l", in: "missing"), Self.file("x", "x"), Self.file("y", "y", in: "x")])
        #expect(layout.paths["l"]?.components == ["lost.txt"])
        #expect(layout.paths["y"]?.components == ["y"])
    }

    /// Two folders moved into each other on two devices at once: the one with the smaller
    /// record name goes to the root, the other stays inside it, and what they hold follows.
    @Test func aCycleIsBrokenTheSameWayEverywhere() {
        let records = [Self.folder("A", "a", in: "b"), Self.folder("B", "b", in: "a"), Self.file("f", "f", in: "b")]
        for order in [records, records.reversed(), [records[1], records[2], records[0]]] {
            let layout = TreeLayout(order)
            #expect(layout.paths["a"]?.components == ["A"])
            #expect(layout.paths["b"]?.components == ["A", "B"])
            #expect(layout.paths["f"]?.components == ["A", "B", "f"])
        }
    }

    @Test func collidingFoldersKeepTheirContentsApart() {
        let layout = TreeLayout([
            Self.folder("Docs", "d1"), Self.folder("docs", "d2"), Self.file("x", "x1", in: "d1"), Self.file("x", "x2", in: "d2"),
        ])
        #expect(layout.paths["x1"]?.components == ["Docs", "x"])
        #expect(layout.paths["x2"]?.components == ["docs 2", "x"])
    }
}
