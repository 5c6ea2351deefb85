import Foundation
import Nimbus
import NimbusProtocol
import Testing

/// The SDK's sharing requests and answers, against the shapes of docs/SHARING.md.
@Suite("Sharing on the wire")
struct ShareWireTests {
    let zone = ZoneID(zoneName: "Albums")

    /// A share record as the server returns it to its owner.
    static func shareJSON(name: String = "share-album-1", owner: String = "_a1") -> JSON {
        [
            "recordName": .string(name), "recordType": "cloudkit.share", "recordChangeTag": "s1",
            "fields": ["cloudkit.title": ["value": "Summer", "type": "STRING"]],
            "shortGUID": "mB3xV0abcdefghijklmnop", "url": "https://nimbus.example/share/mB3xV0abcdefghijklmnop",
            "publicPermission": "NONE",
            "owner": [
                "userIdentity": ["userRecordName": .string(owner)], "type": "OWNER", "acceptanceStatus": "ACCEPTED",
                "permission": "READ_WRITE", "participantID": "p0",
            ],
            "currentUserParticipant": [
                "userIdentity": ["userRecordName": .string(owner)], "type": "OWNER", "acceptanceStatus": "ACCEPTED",
                "permission": "READ_WRITE", "participantID": "p0",
            ],
            "participants": [
                [
                    "userIdentity": ["userRecordName": .string(owner)], "type": "OWNER",
                    "acceptanceStatus": "ACCEPTED", "permission": "READ_WRITE", "participantID": "p0",
                ],
                [
                    "userIdentity": ["userRecordName": "_b2"], "type": "PRIVATE_USER", "acceptanceStatus": "PENDING",
                    "permission": "READ_WRITE", "participantID": "p1",
                ],
                [
                    "userIdentity": ["lookupInfo": ["emailAddress": "ann@example.com"]], "type": "PRIVATE_USER",
                    "acceptanceStatus": "PENDING", "permission": "READ_ONLY", "participantID": "p2",
                ],
            ],
            "zoneID": ["zoneName": "Albums", "ownerRecordName": .string(owner)],
        ]
    }

    static func albumJSON(share: String? = "share-album-1") -> JSON {
        var members: [String: JSON] = [
            "recordName": "album-1", "recordType": "Album", "recordChangeTag": "r1",
            "fields": ["title": ["value": "Summer", "type": "STRING"]],
        ]
        if let share { members["share"] = ["recordName": .string(share), "action": "NONE"] }
        return .object(members)
    }

    @Test func savingAShareWithItsRootSendsBothInOneAtomicModify() async throws {
        let transport = TestTransport { _ in .json(["records": [Self.albumJSON(), Self.shareJSON()]]) }
        var album = Record(recordType: "Album", recordID: Record.ID(recordName: "album-1", zoneID: zone))
        album["title"] = "Summer"
        var share = Share(rootRecord: album, shareID: Record.ID(recordName: "share-album-1", zoneID: zone))
        share.title = "Summer"
        share.addParticipant(.init(userRecordName: "_b2", permission: .readWrite))
        share.addParticipant(.init(emailAddress: "ann@example.com", permission: .readOnly))

        let (saved, root) = try await makeContainer(transport).privateCloudDatabase.save(share, rootRecord: album)

        #expect(transport.operations == ["records/modify"])
        let body = try #require(transport.bodies.first)
        #expect(body["atomic"] == true)
        #expect(body["zoneID"]?["zoneName"] == "Albums")
        let operations = try #require(body["operations"]?.array)
        #expect(operations.count == 2)
        let sentRoot = try #require(operations.first?["record"])
        #expect(sentRoot["recordName"] == "album-1")
        #expect(sentRoot["share"] == ["recordName": "share-album-1", "action": "NONE"])
        let sentShare = try #require(operations.last?["record"])
        #expect(operations.last?["operationType"] == "create")
        #expect(sentShare["recordType"] == "cloudkit.share")
        #expect(sentShare["fields"]?["cloudkit.title"]?["value"] == "Summer")
        #expect(sentShare["publicPermission"] == "NONE")
        #expect(
            sentShare["participants"] == [
                ["userIdentity": ["userRecordName": "_b2"], "permission": "READ_WRITE"],
                ["userIdentity": ["lookupInfo": ["emailAddress": "ann@example.com"]], "permission": "READ_ONLY"],
            ])

        #expect(root.share?.recordName == "share-album-1")
        #expect(saved.shortGUID == "mB3xV0abcdefghijklmnop")
        #expect(saved.url?.absoluteString == "https://nimbus.example/share/mB3xV0abcdefghijklmnop")
        #expect(saved.title == "Summer")
        #expect(saved.owner?.role == .owner)
        #expect(saved.owner?.userIdentity.userRecordID?.recordName == "_a1")
        #expect(saved.currentUserParticipant?.participantID == "p0")
        #expect(saved.participants.map(\.participantID) == ["p0", "p1", "p2"])
        #expect(saved.participants[2].userIdentity.lookupInfo?.emailAddress == "ann@example.com")
        #expect(saved.participants[2].permission == .readOnly)
        #expect(saved.participants[1].acceptanceStatus == .pending)
    }

    @Test func resavingASavedShareSendsEveryParticipantButTheOwner() async throws {
        let transport = TestTransport { _ in .json(["records": [Self.shareJSON()]]) }
        let fetched = try await makeContainer(transport).privateCloudDatabase
            .record(for: Record.ID(recordName: "share-album-1", zoneID: zone))
        var share = try #require(Share(fetched))
        let ann = try #require(share.participants.first { $0.participantID == "p2" })
        share.setPermission(.readWrite, for: ann)
        share.removeParticipant(.init(userRecordName: "_b2"))
        share.publicPermission = .readOnly
        _ = try await makeContainer(transport).privateCloudDatabase.save(share)

        let operation = try #require(transport.bodies.last?["operations"]?.array?.first)
        #expect(operation["operationType"] == "update")
        #expect(operation["record"]?["recordChangeTag"] == "s1")
        #expect(operation["record"]?["publicPermission"] == "READ_ONLY")
        #expect(
            operation["record"]?["participants"] == [
                ["userIdentity": ["lookupInfo": ["emailAddress": "ann@example.com"]], "permission": "READ_WRITE"]
            ])
    }

    @Test func aZoneWideShareIsNamedAfterCloudKitsZoneShare() {
        let share = Share(zoneID: zone)
        #expect(share.id.recordName == "cloudkit.zoneshare")
        #expect(share.isZoneWide)
        #expect(share.record.recordType == "cloudkit.share")
        #expect(share.rootRecordID == nil)
        #expect(Share(Record(recordType: "Album")) == nil)
    }

    @Test func parentIsSentWhenSetAndNullWhenRemoved() async throws {
        // The server answers with the parent it keeps.
        guard case .object(var members) = serverRecordJSON("photo-1", type: "Photo", tag: "p1") else { return }
        members["parent"] = ["recordName": "album-1", "action": "NONE"]
        let child = JSON.object(members)
        let transport = TestTransport { _ in .json(["records": [child]]) }
        let database = makeContainer(transport).privateCloudDatabase
        var photo = Record(recordType: "Photo", recordID: Record.ID(recordName: "photo-1", zoneID: zone))
        photo.parent = Reference(recordName: "album-1")
        var saved = try await database.save(photo)
        #expect(transport.bodies.last?["operations"]?.array?[0]["record"]?["parent"] == ["recordName": "album-1", "action": "NONE"])

        #expect(saved.parent?.recordName == "album-1")
        saved.parent = nil
        try await database.save(saved)
        #expect(transport.bodies.last?["operations"]?.array?[0]["record"]?["parent"] == .null)

        // Never set: not sent at all.
        try await database.save(Record(recordType: "Photo", recordID: Record.ID(recordName: "photo-2", zoneID: zone)))
        #expect(transport.bodies.last?["operations"]?.array?[0]["record"]?.object?["parent"] == nil)
    }

    @Test func parentAndShareAreReadFromChangeFeedsAndKeptInSystemFields() async throws {
        var photo = serverRecordJSON("photo-1", type: "Photo", tag: "p1", fields: ["caption": "Beach"])
        if case .object(var members) = photo {
            members["parent"] = ["recordName": "album-1", "action": "NONE"]
            photo = .object(members)
        }
        let photoJSON = photo
        let transport = TestTransport { _ in
            .json(["records": [photoJSON, Self.albumJSON(), Self.shareJSON()], "syncToken": "t", "moreComing": false])
        }
        let page = try await makeContainer(transport).privateCloudDatabase.recordZoneChanges(inZoneWith: zone, since: nil)
        let records = Dictionary(uniqueKeysWithValues: page.modifications.map { ($0.id.recordName, $0) })
        #expect(records["photo-1"]?.parent?.recordName == "album-1")
        #expect(records["photo-1"]?.changedKeys == [])
        #expect(records["album-1"]?.share?.recordName == "share-album-1")
        let share = try #require(records["share-album-1"].flatMap(Share.init))
        #expect(share.participants.count == 3)

        // A cache keeps them through the system fields.
        for record in page.modifications {
            let copy = try Record(systemFieldsData: record.encodeSystemFields())
            #expect(copy.parent == record.parent)
            #expect(copy.share == record.share)
        }
        let cachedShare = try #require(Share(try Record(systemFieldsData: share.record.encodeSystemFields())))
        #expect(cachedShare.participants == share.participants)
        #expect(cachedShare.url == share.url)
        #expect(cachedShare.currentUserParticipant == share.currentUserParticipant)
    }

    static func metadataJSON(status: String = "PENDING") -> JSON {
        [
            "results": [
                [
                    "shortGUID": "mB3xV0abcdefghijklmnop", "containerIdentifier": "iCloud.com.example.reader",
                    "environment": "development", "databaseScope": "SHARED",
                    "zoneID": ["zoneName": "Albums", "ownerRecordName": "_a1"],
                    "share": shareJSON(), "rootRecordName": "album-1", "rootRecord": albumJSON(),
                    "ownerIdentity": [
                        "userRecordName": "_a1", "nameComponents": ["givenName": "Ada", "familyName": "L"],
                    ],
                    "participantType": "PRIVATE_USER", "participantStatus": .string(status),
                    "participantPermission": "READ_WRITE",
                ]
            ]
        ]
    }

    @Test func resolvingAndAcceptingAShareURL() async throws {
        let transport = TestTransport { request in
            request.url.path.hasSuffix("records/accept") ? .json(Self.metadataJSON(status: "ACCEPTED")) : .json(Self.metadataJSON())
        }
        let container = makeContainer(transport)
        let url = URL(string: "https://nimbus.example/share/mB3xV0abcdefghijklmnop")!
        let metadata = try await container.shareMetadata(for: url, shouldFetchRootRecord: true)

        #expect(transport.requests.first?.url.path.hasSuffix("/development/public/records/resolve") == true)
        #expect(
            transport.bodies.first
                == ["shortGUIDs": [["value": "mB3xV0abcdefghijklmnop", "shouldFetchRootRecord": true]]])
        #expect(metadata.zoneID == ZoneID(zoneName: "Albums", ownerRecordName: "_a1"))
        #expect(metadata.environment == .development)
        #expect(metadata.containerIdentifier == "iCloud.com.example.reader")
        #expect(metadata.share.id.zoneID.ownerRecordName == "_a1")
        #expect(metadata.share.title == "Summer")
        #expect(metadata.rootRecordID?.recordName == "album-1")
        #expect(metadata.rootRecord?["title"] == "Summer")
        #expect(metadata.ownerIdentity.nameComponents?.givenName == "Ada")
        #expect(metadata.participantRole == .privateUser)
        #expect(metadata.participantStatus == .pending)
        #expect(metadata.participantPermission == .readWrite)

        let accepted = try await container.accept(metadata)
        #expect(transport.requests.last?.url.path.hasSuffix("/public/records/accept") == true)
        #expect(transport.bodies.last?["shortGUIDs"]?.array?[0]["value"] == "mB3xV0abcdefghijklmnop")
        #expect(accepted.participantStatus == .accepted)
    }

    @Test func aShareNotOpenToTheCallerIsUnknownItem() async throws {
        let transport = TestTransport { _ in
            .json([
                "results": [
                    [
                        "shortGUID": "nope", "serverErrorCode": "NOT_FOUND",
                        "reason": "no share with this shortGUID is open to you",
                    ]
                ]
            ])
        }
        await #expect {
            try await makeContainer(transport).shareMetadata(forShortGUID: "nope")
        } throws: { error in
            (error as? NimbusError)?.code == .unknownItem
        }
    }

    @Test func leavingDeletesTheShareInTheSharedDatabase() async throws {
        let transport = TestTransport { _ in .json(["records": [["recordName": "cloudkit.zoneshare", "deleted": true]]]) }
        let share = Share(zoneID: ZoneID(zoneName: "Albums", ownerRecordName: "_a1"))
        try await makeContainer(transport).leave(share)
        #expect(transport.requests.first?.url.path.hasSuffix("/shared/records/modify") == true)
        let body = try #require(transport.bodies.first)
        #expect(body["zoneID"] == ["zoneName": "Albums", "ownerRecordName": "_a1"])
        #expect(body["operations"]?.array?[0]["operationType"] == "forceDelete")
        #expect(body["operations"]?.array?[0]["record"]?["recordName"] == "cloudkit.zoneshare")
    }
}
