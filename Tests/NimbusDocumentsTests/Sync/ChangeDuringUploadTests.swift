import Foundation
import Nimbus
import NimbusDocuments
import NimbusSync
import NimbusTestSupport
import NIOConcurrencyHelpers
import Testing

/// A file that changes while it is uploaded: the upload carries the copy taken when the scan
/// saw the file hold still (never half of one version and half of the other), and the next
/// pass sends the new bytes again. Nothing is lost.
@Suite("Documents changed during an upload")
struct ChangeDuringUploadTests {
    @Test(arguments: Engine.available)
    func aFileChangedWhileItIsUploadedIsSentAgainAndArrivesWhole(engine: Engine) async throws {
        try await DocumentsHarness.with(engine: engine) { harness in
            let mac = try harness.device("mac")
            let phone = try harness.device("phone")
            try await mac.folder.start()
            try await phone.folder.start()
            let first = String(repeating: "first version. ", count: 2_000)
            let second = String(repeating: "SECOND VERSION, written during the upload. ", count: 1_500)
            try mac.write(first, to: "Reports/q3.txt")
            let target = mac.url("Reports/q3.txt")
            let sentFiles = FilesSeen()
            // The seam: as the upload starts, the file in the folder is rewritten.
            mac.transfers.duringNextUpload { sending in
                sentFiles.add(sending)
                try Data(second.utf8).write(to: target)
            }
            let uploadsBefore = mac.transfers.uploads
            try await mac.folder.sync()
            #expect(mac.transfers.uploads == uploadsBefore + 1)
            // What went was the staged copy (outside the folder), whole: the first version.
            let sent = try #require(sentFiles.first)
            #expect(!sent.path.hasPrefix(mac.root.path))
            try await phone.folder.sync()
            #expect(phone.read("Reports/q3.txt") == first)
            #expect(mac.read("Reports/q3.txt") == second, "the edit made during the upload is kept on disk")

            // The retry: the next pass sees the file changed since it was staged and sends it again.
            try await mac.folder.sync()
            #expect(mac.transfers.uploads == uploadsBefore + 2)
            #expect(try await mac.folder.item(at: DocumentPath("Reports/q3.txt"))?.isUploading == false)
            try await phone.folder.sync()
            #expect(phone.read("Reports/q3.txt") == second)
            #expect(try phone.tree() == ["Reports": nil, "Reports/q3.txt": second], "no conflict copy: the edits were one device's")
        }
    }
}

/// The files an upload hook saw.
final class FilesSeen: Sendable {
    private let files = NIOLockedValueBox<[URL]>([])
    func add(_ file: URL) { files.withLockedValue { $0.append(file) } }
    var first: URL? { files.withLockedValue { $0.first } }
}
