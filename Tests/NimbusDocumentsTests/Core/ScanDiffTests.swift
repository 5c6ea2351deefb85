import NimbusDocuments
import Testing

/// The scanner's decisions on made-up trees: no disk, no server.
@Suite struct ScanDiffTests {
    static func path(_ text: String) -> DocumentPath { try! DocumentPath(text) }
    static func file(_ inode: UInt64, size: Int64 = 1, modified: Int64 = 1) -> DiskEntry {
        DiskEntry(isFolder: false, inode: inode, size: size, modified: modified)
    }
    static func folder(_ inode: UInt64) -> DiskEntry { DiskEntry(isFolder: true, inode: inode, size: 0, modified: 1) }
    static func known(_ record: String, _ path: String, _ entry: DiskEntry, _ sha: String = "") -> KnownItem {
        KnownItem(recordName: record, path: Self.path(path), entry: entry, sha256: sha)
    }

    @Test func unchangedItemsAreNotHashed() {
        let known = [Self.known("f", "a.txt", Self.file(1), "s1"), Self.known("d", "d", Self.folder(2))]
        let result = ScanDiff.diff(known: known, disk: [Self.path("a.txt"): Self.file(1), Self.path("d"): Self.folder(2)]) { _ in
            Issue.record("hashed an unchanged file")
            return nil
        }
        #expect(result.outcomes["f"] == .present(path: Self.path("a.txt"), entry: Self.file(1), sha256: "s1"))
        #expect(result.created.isEmpty)
    }

    @Test func aFolderRenameMovesWhatItHoldsByInode() {
        let known = [
            Self.known("d", "Inbox", Self.folder(10)), Self.known("f", "Inbox/x.txt", Self.file(11), "sx"),
        ]
        let disk = [Self.path("Letters"): Self.folder(10), Self.path("Letters/x.txt"): Self.file(11)]
        let result = ScanDiff.diff(known: known, disk: disk) { _ in nil }
        #expect(result.outcomes["d"] == .present(path: Self.path("Letters"), entry: Self.folder(10), sha256: ""))
        #expect(result.outcomes["f"] == .present(path: Self.path("Letters/x.txt"), entry: Self.file(11), sha256: "sx"))
        #expect(result.created.isEmpty)
    }

    /// An editor that saves by writing a new file and renaming it over the old: a new inode
    /// at the same path is the same document, changed.
    @Test func anAtomicSaveIsAnEdit() {
        let known = [Self.known("f", "a.txt", Self.file(1, size: 1), "old")]
        let result = ScanDiff.diff(known: known, disk: [Self.path("a.txt"): Self.file(7, size: 2)]) { _ in "new" }
        #expect(result.outcomes["f"] == .present(path: Self.path("a.txt"), entry: Self.file(7, size: 2), sha256: "new"))
    }

    /// Two files swapped names: each is found by its inode, neither is "edited".
    @Test func swappedNamesAreTwoMoves() {
        let known = [Self.known("a", "a", Self.file(1), "sa"), Self.known("b", "b", Self.file(2), "sb")]
        let result = ScanDiff.diff(known: known, disk: [Self.path("a"): Self.file(2), Self.path("b"): Self.file(1)]) { _ in nil }
        #expect(result.outcomes["a"] == .present(path: Self.path("b"), entry: Self.file(1), sha256: "sa"))
        #expect(result.outcomes["b"] == .present(path: Self.path("a"), entry: Self.file(2), sha256: "sb"))
    }

    /// Without a stable inode (a copy, then the original deleted), the same size and bytes
    /// make a move, not a delete and a create.
    @Test func aCopyThenDeleteIsAMoveByContent() {
        let known = [Self.known("f", "old.txt", Self.file(1, size: 5), "same")]
        let disk = [Self.path("new.txt"): Self.file(9, size: 5), Self.path("other.txt"): Self.file(8, size: 5)]
        let result = ScanDiff.diff(known: known, disk: disk) { $0.description == "new.txt" ? "same" : "different" }
        #expect(result.outcomes["f"] == .present(path: Self.path("new.txt"), entry: Self.file(9, size: 5), sha256: "same"))
        #expect(result.created.map(\.path) == [Self.path("other.txt")])
        #expect(result.created.first?.sha256 == "different")
    }

    @Test func deletedAndNewAndUnsettled() {
        let known = [Self.known("f", "gone.txt", Self.file(1), "g"), Self.known("e", "edited.txt", Self.file(2), "e")]
        let disk = [
            Self.path("new"): Self.folder(3), Self.path("new/n.txt"): Self.file(4, size: 9),
            Self.path("busy.txt"): Self.file(5, size: 3), Self.path("edited.txt"): Self.file(2, size: 4),
        ]
        let result = ScanDiff.diff(known: known, disk: disk) { path in
            path.description == "new/n.txt" ? "n" : nil  // busy.txt and edited.txt change while read
        }
        #expect(result.outcomes["f"] == .gone)
        #expect(result.outcomes["e"] == .unsettled)
        #expect(result.created.map(\.path) == [Self.path("new"), Self.path("new/n.txt")])
        #expect(result.unsettled == [Self.path("busy.txt")])
    }
}
