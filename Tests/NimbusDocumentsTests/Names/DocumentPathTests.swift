import NimbusDocuments
import Testing

/// A path from the app or the disk never leaves the folder.
@Suite struct DocumentPathTests {
    @Test func relativePathsParse() throws {
        #expect(try DocumentPath("Projects/Plan.txt").components == ["Projects", "Plan.txt"])
        #expect(try DocumentPath("").components == [])
        #expect(try DocumentPath("ab:c/d").components == ["ab:c", "d"])
        #expect(try DocumentPath("x/y").parent == DocumentPath("x"))
        #expect(try DocumentPath("x/y").name == "y")
        #expect(try DocumentPath("x/y").isWithin(DocumentPath("x")))
        #expect(try !DocumentPath("xy").isWithin(DocumentPath("x")))
        #expect(try DocumentPath("a").appending("b") == DocumentPath("a/b"))
    }

    @Test(arguments: [
        "../etc/passwd", "a/../../b", "..", ".", "./a", "a/./b", "/etc/passwd", "\\\\server\\share", "C:\\Windows",
        "c:file", "a//b", "a/", "a/\0b",
    ])
    func escapesAreRefused(_ path: String) {
        #expect(throws: DocumentsError.pathEscapesFolder(path)) { try DocumentPath(path) }
    }

    @Test func componentsAreCheckedToo() {
        for bad in [[".."], ["a", ""], ["a/b"], ["."], ["x\0"]] {
            #expect(throws: DocumentsError.self) { try DocumentPath(components: bad) }
        }
        #expect(throws: DocumentsError.self) { try DocumentPath.root.appending("..") }
    }
}
