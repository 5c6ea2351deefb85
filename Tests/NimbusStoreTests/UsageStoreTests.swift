import Foundation
import NimbusProtocol
import NimbusStore
import NimbusTestSupport
import Testing

/// The usage counter each engine keeps (``UsageStore``): changed in the transaction of every
/// write, equal at every moment to a count from scratch, and what quotas compare.
@Suite("Usage counter")
struct UsageStoreTests {
    /// Four asset contents; each hash has one size, as content addressing implies.
    static let assets: [(sha: String, size: Int64)] = (0..<4).map { index in
        (String(repeating: String(format: "%02x", 0xa0 + index), count: 32), Int64(1_000 * (index + 1)))
    }

    /// A known asset value (no receipt): the database must hold it already.
    static func known(_ index: Int) -> FieldValue {
        .asset(Asset(fileChecksum: Asset.fileChecksum(sha256Hex: assets[index].sha), size: assets[index].size))
    }

    /// Finishes an upload of asset `index` for one field and returns its value with the receipt.
    static func upload(
        _ index: Int, record: String, zone: String, field: String = "image", in database: DatabaseKey = Fixture.alice,
        store: any NimbusStorage, serial: Int
    ) async throws -> FieldValue {
        let (sha, size) = assets[index]
        let upload = AssetUpload(
            id: "upload-\(serial)", database: database, userRecordName: Fixture.caller.userRecordName, zone: zone,
            recordName: record, recordType: "Item", fieldName: field, createdAt: Fixture.past,
            expiresAt: Fixture.past + 86_400_000)
        try await store.createAssetUploads([upload])
        let receipt = "receipt-\(serial)"
        _ = try await store.completeAssetUpload(
            id: upload.id, .init(sha256: sha, size: size, receipt: receipt), now: Fixture.past)
        return .asset(Asset(fileChecksum: Asset.fileChecksum(sha256Hex: sha), size: size, receipt: receipt))
    }

    static func expectConsistent(_ store: any NimbusStorage, _ step: String, in database: DatabaseKey = Fixture.alice)
        async throws
    {
        let counted = try await store.usage(of: database)
        let recounted = try await store.recountUsage(of: database)
        #expect(counted == recounted, "after \(step)")
    }

    /// Saves, replaces, updates, deletes, `DELETE_SELF` cascades, zone deletions, asset
    /// attachments (by receipt and by checksum), atomic failures, refused quotas and the
    /// asset collector, drawn from a seeded generator: after each, the counter equals a
    /// recount.
    @Test(arguments: Engine.available) func theCounterEqualsARecountAfterARandomMixOfWrites(engine: Engine)
        async throws
    {
        try await engine.withStore { store in
            var random = SplitMix64(seed: 16)
            let zones = ["Z", "Y"]
            _ = try await store.modifyZones(zones.map { .create(zoneName: $0) }, in: Fixture.alice)
            var serial = 0
            // What the mix covered, so a change of seed cannot quietly test less.
            var refused = 0
            var cascaded = 0
            var mostAssetBytes: Int64 = 0
            for step in 0..<160 {
                let zone = random.pick(zones)
                let kind = random.int(0..<20)
                if kind == 0 {
                    _ = try await store.modifyZones([.delete(zoneName: zone)], in: Fixture.alice)
                    _ = try await store.modifyZones([.create(zoneName: zone)], in: Fixture.alice)
                    try await Self.expectConsistent(store, "step \(step): zone \(zone) deleted")
                    continue
                }
                if kind == 1 {
                    _ = try await store.collectAssetRows(now: Fixture.past, cutoff: Fixture.past + 1)
                    try await Self.expectConsistent(store, "step \(step): assets collected")
                    continue
                }
                var operations: [RecordOperation] = []
                var names = Set<String>()
                for _ in 0..<random.int(1...3) {
                    let name = "r\(random.int(0..<8))"
                    guard names.insert(name).inserted else { continue }
                    let type = random.pick([
                        RecordOperationType.forceReplace, .forceReplace, .forceUpdate, .forceUpdate, .forceDelete, .create,
                    ])
                    var fields: [String: FieldValue] = [:]
                    if !type.isDelete {
                        // Non-ASCII text: bytes, not characters, are counted.
                        fields["title"] = .string(String(repeating: random.pick(["a", "é", "漢"]), count: random.int(0...120)))
                        if random.chance(0.3) {
                            fields["parent"] = .reference(
                                Reference(recordName: "r\(random.int(0..<8))", action: random.pick([.deleteSelf, .none])))
                        }
                        if random.chance(0.35) {
                            let index = random.int(0..<Self.assets.count)
                            let field = random.pick(["image", "thumb"])
                            if random.chance(0.5) {
                                serial += 1
                                fields[field] = try await Self.upload(
                                    index, record: name, zone: zone, field: field, store: store, serial: serial)
                            } else {
                                fields[field] = Self.known(index)
                            }
                        }
                    }
                    operations.append(Fixture.operation(type, name, fields: fields))
                }
                var policy = Fixture.policy()
                if random.chance(0.15) {
                    // A quota near the current usage: some requests are refused whole.
                    let now = try await store.usage(of: Fixture.alice).totalBytes
                    policy.quotaBytes = max(1, now + Int64(random.int(-500...500)))
                }
                do {
                    let outcome = try await store.modifyRecords(
                        operations, zone: zone, atomic: random.chance(0.3), policy: policy, caller: Fixture.caller,
                        in: Fixture.alice)
                    cascaded += outcome.commit?.changes.filter { !names.contains($0.after.recordName) }.count ?? 0
                } catch let error as CloudKitError where error.code == .quotaExceeded {
                    refused += 1  // refused whole: the counter must not have moved either
                }
                try await Self.expectConsistent(store, "step \(step): \(operations.map { "\($0.type) \($0.record.recordName)" })")
                mostAssetBytes = max(mostAssetBytes, try await store.usage(of: Fixture.alice).assetBytes)
            }
            #expect(try await store.usage(of: Fixture.alice).recordBytes > 0)
            #expect(refused > 0)
            #expect(cascaded > 0)
            #expect(mostAssetBytes > Self.assets[0].size)
        }
    }

    @Test(arguments: Engine.available) func overQuotaNothingIsWrittenAndADeleteFreesAtOnce(engine: Engine)
        async throws
    {
        try await engine.withStore { store in
            _ = try await store.modifyZones([.create(zoneName: "Z")], in: Fixture.alice)
            var policy = Fixture.policy()
            policy.quotaBytes = 4_000
            func save(_ operations: [RecordOperation]) async throws {
                _ = try await store.modifyRecords(
                    operations, zone: "Z", atomic: false, policy: policy, caller: Fixture.caller, in: Fixture.alice)
            }
            let image = try await Self.upload(1, record: "a", zone: "Z", store: store, serial: 1)
            try await save([Fixture.operation(.create, "a", fields: ["image": image])])
            let first = try await store.usage(of: Fixture.alice)
            #expect(first.assetBytes == 2_000)

            // Over the quota: the whole request fails, its other record included.
            let big = try await Self.upload(2, record: "b", zone: "Z", store: store, serial: 2)
            let refused = await Fixture.errorCode {
                try await save([
                    Fixture.operation(.create, "c", fields: ["title": .string("small")]),
                    Fixture.operation(.create, "b", fields: ["image": big]),
                ])
            }
            #expect(refused == .quotaExceeded)
            #expect(try await store.usage(of: Fixture.alice) == first)
            #expect(try await store.lookupRecords(["b", "c"], zone: "Z", in: Fixture.alice) == [nil, nil])

            // A delete frees the space at once; the refused save then fits.
            _ = try await store.modify([Fixture.operation(.forceDelete, "a")])
            #expect(try await store.usage(of: Fixture.alice) == .empty)
            try await save([Fixture.operation(.create, "b", fields: ["image": big, "title": .string("a long title")])])
            #expect(try await store.usage(of: Fixture.alice).assetBytes == 3_000)

            // Under a quota lowered below the usage, writes that do not grow it still succeed.
            policy.quotaBytes = 100
            try await save([Fixture.operation(.forceUpdate, "b", fields: ["title": .string("t")])])
            #expect(
                await Fixture.errorCode {
                    try await save([Fixture.operation(.forceUpdate, "b", fields: ["title": .string("a longer title")])])
                } == .quotaExceeded)

            // Deleting a zone frees what its records held.
            _ = try await store.modifyZones([.delete(zoneName: "Z")], in: Fixture.alice)
            #expect(try await store.usage(of: Fixture.alice) == .empty)
        }
    }

    /// A child saved bigger in the request that deletes its `DELETE_SELF` parent is then
    /// tombstoned by the cascade: what it held before the request is freed, once.
    @Test(arguments: Engine.available) func aRecordSavedAndCascadedInOneRequestIsFreedOnce(engine: Engine)
        async throws
    {
        try await engine.withStore { store in
            _ = try await store.modifyZones([.create(zoneName: "Z")], in: Fixture.alice)
            let parent: FieldValue = .reference(Reference(recordName: "p", action: .deleteSelf))
            _ = try await store.modify([
                Fixture.operation(.create, "p", fields: ["title": .string("parent")]),
                Fixture.operation(.create, "c", fields: ["parent": parent, "title": .string("child")]),
            ])
            let outcome = try await store.modify([
                Fixture.operation(.forceUpdate, "c", fields: ["title": .string(String(repeating: "x", count: 500))]),
                Fixture.operation(.forceDelete, "p"),
            ])
            #expect(outcome.commit?.changes.count == 3)
            #expect(try await store.lookupRecords(["p", "c"], zone: "Z", in: Fixture.alice) == [nil, nil])
            #expect(try await store.usage(of: Fixture.alice) == .empty)
            #expect(try await store.recountUsage(of: Fixture.alice) == .empty)
        }
    }

    @Test(arguments: Engine.available) func eachDatabaseCountsAnAssetOnceAndOnItsOwn(engine: Engine)
        async throws
    {
        try await engine.withStore { store in
            _ = try await store.modifyZones([.create(zoneName: "Z"), .create(zoneName: "Y")], in: Fixture.alice)
            let image = try await Self.upload(0, record: "a", zone: "Z", store: store, serial: 1)
            _ = try await store.modify([Fixture.operation(.create, "a", fields: ["image": image])])
            // The same bytes in another record, another zone and another field count once.
            _ = try await store.modify([Fixture.operation(.create, "b", fields: ["image": Self.known(0)])])
            _ = try await store.modify([Fixture.operation(.create, "c", fields: ["thumb": Self.known(0)])], zone: "Y")
            #expect(try await store.usage(of: Fixture.alice).assetBytes == 1_000)
            // Until the last record holding them goes.
            _ = try await store.modify([Fixture.operation(.forceDelete, "a"), Fixture.operation(.forceDelete, "b")])
            #expect(try await store.usage(of: Fixture.alice).assetBytes == 1_000)
            _ = try await store.modifyZones([.delete(zoneName: "Y")], in: Fixture.alice)
            #expect(try await store.usage(of: Fixture.alice) == .empty)
            // Bob's database was never written.
            #expect(try await store.usage(of: Fixture.bob) == .empty)
            #expect(try await store.recountUsage(of: Fixture.bob) == .empty)
        }
    }
}
