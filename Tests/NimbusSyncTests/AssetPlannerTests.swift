import Foundation
import Nimbus
import NimbusProtocol
import Testing

@testable import NimbusSync

/// The asset decisions, without a database or a server.
@Suite("Asset planner")
struct AssetPlannerTests {
    let file = URL(fileURLWithPath: "/photos/beach.jpg")
    let url = URL(string: "https://sync.example.com/assets/1/upload/t1")!

    func record(_ fields: [String: FieldValue]) -> Nimbus.Record {
        var record = Nimbus.Record(recordType: "Photo", recordID: Nimbus.Record.ID(recordName: "p1"))
        for (key, value) in fields { record.setFieldValue(value, forKey: key) }
        return record
    }

    func uploaded(_ checksum: String) -> Nimbus.Asset {
        Nimbus.Asset(serverValue: NimbusProtocol.Asset(fileChecksum: checksum, size: 10, receipt: "r-\(checksum)"))
    }

    @Test func aFileIsAskedAnURLThenResumedOnceItHasOneThenSentWithItsReceipt() {
        let photo = record(["title": "Beach", "image": Nimbus.Asset(fileURL: file).fieldValue])
        let key = AssetUploadKey(recordName: "p1", field: "image", file: file.path)
        #expect(AssetPlanner.steps(for: photo, known: [:]) == [.requestURL(key)])
        #expect(AssetPlanner.steps(for: photo, known: [key: AssetUploadState(url: url)])
            == [.upload(key, url: url, resuming: true)])
        // An upload resumes in the encrypted-asset format it began in, kept with its URL.
        #expect(AssetPlanner.steps(for: photo, known: [key: AssetUploadState(url: url, format: 2)])
            == [.upload(key, url: url, resuming: true, format: 2)])
        let done = uploaded("c1")
        #expect(AssetPlanner.steps(for: photo, known: [key: AssetUploadState(url: url, uploaded: done)]) == [.ready(key, done)])

        #expect(AssetPlanner.withReceipts(photo, uploads: [:]) == nil, "never sent without its asset")
        let ready = AssetPlanner.withReceipts(photo, uploads: [key: done])
        #expect(ready?.fieldValue(forKey: "image") == done.fieldValue)
        #expect(ready?.fieldValue(forKey: "title") == "Beach")
    }

    @Test func serverAssetsAndUnchangedFieldsNeedNoUpload() {
        var photo = record(["image": uploaded("c1").fieldValue])
        photo.clearChangedKeys()
        photo.setFieldValue("Renamed", forKey: "title")
        #expect(AssetPlanner.steps(for: photo, known: [:]).isEmpty)
        #expect(AssetPlanner.withReceipts(photo, uploads: [:]) == photo)
    }

    @Test func everyFileOfAnAssetListIsUploaded() {
        let other = URL(fileURLWithPath: "/photos/dunes.jpg")
        let list = FieldValue.list(elementType: .asset, [Nimbus.Asset(fileURL: file).fieldValue, Nimbus.Asset(fileURL: other).fieldValue])
        let photo = record(["images": list])
        let keys = [file, other].map { AssetUploadKey(recordName: "p1", field: "images", file: $0.path) }
        #expect(AssetPlanner.steps(for: photo, known: [:]) == keys.map(AssetStep.requestURL))
        let ready = AssetPlanner.withReceipts(photo, uploads: [keys[0]: uploaded("a"), keys[1]: uploaded("b")])
        #expect(ready?.fieldValue(forKey: "images") == .list(elementType: .asset, [uploaded("a").fieldValue, uploaded("b").fieldValue]))
    }

    @Test func aLostZonesRecordsUploadTheirCachedAssetsAgain() {
        let cache = URL(fileURLWithPath: "/cache", isDirectory: true)
        let fields: [String: FieldValue] = [
            "image": uploaded("c+1/=").fieldValue,
            "pages": .list(elementType: .asset, [uploaded("c2").fieldValue, uploaded("gone").fieldValue]),
            "draft": Nimbus.Asset(fileURL: file).fieldValue,
            "title": "Beach",
        ]
        let cachedFile = { (checksum: String) -> URL? in
            checksum == "gone" ? nil : cache.appendingPathComponent(AssetPlanner.fileName(checksum: checksum))
        }
        let again = AssetPlanner.reuploading(fields, cachedFile: cachedFile)
        #expect(Nimbus.Asset(fieldValue: again["image"]!)?.fileURL == cachedFile("c+1/="))
        #expect(again["pages"]?.sdkAssets.map(\.fileURL) == [cachedFile("c2"), nil], "what is not cached stays the server's")
        #expect(again["draft"] == fields["draft"] && again["title"] == "Beach")
        #expect(AssetPlanner.checksum(fileName: AssetPlanner.fileName(checksum: "ab+/cd==")) == "ab+/cd==")
    }

    @Test func evictionDropsTheLeastRecentlyUsedUnpinnedFilesUntilTheCacheFits() {
        let entries = [
            CachedAsset(checksum: "old", size: 100, lastUsed: 1),
            CachedAsset(checksum: "pinned", size: 100, lastUsed: 2),
            CachedAsset(checksum: "middle", size: 100, lastUsed: 3),
            CachedAsset(checksum: "new", size: 100, lastUsed: 4),
        ]
        #expect(AssetPlanner.evictions(entries, bound: 400, pinned: []) == [])
        #expect(AssetPlanner.evictions(entries, bound: 250, pinned: ["pinned"]) == ["old", "middle"])
        #expect(AssetPlanner.evictions(entries, bound: 0, pinned: ["pinned"]) == ["old", "middle", "new"])
    }

    @Test func prefetchKeepsTheAppsOrderSkipsLargeAndCachedFilesAndFetchesEachFileOnce() {
        func photo(_ name: String, _ checksum: String, size: Int64) -> LocalRecord {
            LocalRecord(
                zoneName: "Photos", recordName: name, recordType: "Photo",
                fields: ["image": .asset(NimbusProtocol.Asset(fileChecksum: checksum, size: size, downloadURL: "https://x/\(checksum)"))])
        }
        let records = [photo("b", "cb", size: 10), photo("a", "ca", size: 10), photo("big", "cbig", size: 1000),
                       photo("cached", "cc", size: 10), photo("twin", "cb", size: 10)]
        let picked = AssetPlanner.prefetch(records, fields: nil, smallerThan: 100, cached: ["cc"])
        #expect(picked.map(\.record.recordName) == ["b", "a"])
    }

    @Test func aSaveThatSpentReceiptsForgetsTheUploadsAndARefusedReceiptUploadsAgain() throws {
        let saved = record(["image": uploaded("c1").fieldValue])
        let state = LocalState(pending: PendingChange(
            zoneName: "Photos", recordName: "p1", kind: .save, recordType: "Photo",
            fields: ["image": Nimbus.Asset(fileURL: file).fieldValue], changedKeys: ["image"], revision: 1))
        let success = SyncPlanner.saveAnswered(.success(saved), sent: 1, state: state, rules: MergeRules(), carriedReceipts: true)
        #expect(success.actions == [.putCopy(saved, confirmed: false), .removeOutbox, .forgetUploads])
        #expect(success.send == .saved)

        let refused = NimbusError(.invalidArguments, "the receipt expired; upload the file again")
        let again = SyncPlanner.saveAnswered(.failure(refused), sent: 1, state: state, rules: MergeRules(), carriedReceipts: true)
        #expect(again.actions == [.forgetUploads])
        #expect(again.send == .sendAgain(refused))
        // Without receipts, the same error is a failure of the record's own.
        let plain = SyncPlanner.saveAnswered(.failure(refused), sent: 1, state: state, rules: MergeRules())
        #expect(plain.send == .failed(refused))
    }
}
