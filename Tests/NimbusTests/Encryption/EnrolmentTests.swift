import Foundation
import Nimbus
import NimbusCrypto
import NimbusTestSupport
import Testing

/// Devices of one user: the public key directory, enrolment by code through the server, and
/// revocation, against a real server on both engines.
@Suite("Device enrolment and revocation")
struct EnrolmentTests {
    typealias Device = EncryptedValuesTests.Device
    static let zone = EncryptedValuesTests.zone

    static func keys(_ device: Device) -> EncryptionKeys { device.container.encryption! }

    /// Enrols `device` through `existing` with the code the existing device shows.
    static func enrol(_ device: Device, through existing: Device) async throws {
        let invitation = try await keys(existing).offerEnrolment(in: existing.container)
        #expect(try await keys(existing).answerEnrolment(invitation, in: existing.container) == false)
        let ticket = try await keys(device).requestEnrolment(code: invitation.code, in: device.container)
        #expect(try await keys(device).completeEnrolment(ticket, in: device.container) == false)
        #expect(try await keys(existing).answerEnrolment(invitation, in: existing.container))
        #expect(try await keys(device).completeEnrolment(ticket, in: device.container))
    }

    /// A code of the right shape that is not `code`.
    static func wrong(_ code: String) -> String {
        String(code.map { $0 == "0" ? "1" : "0" })
    }

    @Test(arguments: Engine.available)
    func aDeviceEnrolsByCodeAndWrongOrReplayedCodesFailClearly(engine: Engine) async throws {
        try await LiveServer.with(engine: engine) { live in
            let phone = try await EncryptedValuesTests.device(live, user: "alice")
            try await Self.keys(phone).setUp(in: phone.container)
            try await phone.database.save(RecordZone(zoneID: Self.zone))
            let saved = try await phone.database.save(EncryptedValuesTests.entry("e1", body: "MARKER-enrolled"))
            let user = try await phone.container.userRecordID().recordName

            // The directory lists the phone and the account's sharing key.
            let published = try #require(try await Self.keys(phone).publishedKeys(of: user, in: phone.container))
            #expect(published.devices == [try await Self.keys(phone).devicePublicKey(in: phone.container)])
            #expect(published.sharingKey.count == 32)

            // A new device without keys reports it; with no offer waiting, a request says so.
            let tablet = try await EncryptedValuesTests.device(live, user: "alice")
            #expect(await EncryptedValuesTests.code { _ = try await Self.keys(tablet).setUp(in: tablet.container) } == .encryptionKeysMissing)
            #expect(await EncryptedValuesTests.code { _ = try await Self.keys(tablet).requestEnrolment(code: "0123456789", in: tablet.container) } == .invalidArguments)

            // Enrolled by code, it reads what the phone wrote and is listed in the directory.
            try await Self.enrol(tablet, through: phone)
            #expect(try await tablet.database.record(for: saved.id).encryptedValues["body"] as String? == "MARKER-enrolled")
            #expect(try await Self.keys(tablet).setUp(in: tablet.container) == nil)
            let devices = try #require(try await Self.keys(phone).publishedKeys(of: user, in: phone.container)).devices
            #expect(Set(devices) == [try await Self.keys(phone).devicePublicKey(in: phone.container), try await Self.keys(tablet).devicePublicKey(in: tablet.container)])

            // A malformed code fails before anything is sent; a wrong code spends the offer.
            let laptop = try await EncryptedValuesTests.device(live, user: "alice")
            let offer = try await Self.keys(phone).offerEnrolment(in: phone.container)
            #expect(await EncryptedValuesTests.code { _ = try await Self.keys(laptop).requestEnrolment(code: "12", in: laptop.container) } == .invalidArguments)
            let wrong = try await Self.keys(laptop).requestEnrolment(code: Self.wrong(offer.code), in: laptop.container)
            #expect(await EncryptedValuesTests.code { _ = try await Self.keys(phone).answerEnrolment(offer, in: phone.container) } == .decryptionFailed)
            #expect(await EncryptedValuesTests.code { _ = try await Self.keys(laptop).completeEnrolment(wrong, in: laptop.container) } == .decryptionFailed)
            #expect(await EncryptedValuesTests.code { _ = try await Self.keys(phone).answerEnrolment(offer, in: phone.container) } == .invalidArguments)
            #expect(try await Self.keys(laptop).isReady(in: laptop.container) == false)
            #expect(await EncryptedValuesTests.code { _ = try await laptop.database.record(for: saved.id) } == .encryptionKeysMissing)

            // A request replayed to a new offer does not authenticate there; one replayed to the
            // offer it answered finds the offer spent.
            let second = try await Self.keys(phone).offerEnrolment(in: phone.container)
            _ = try await Self.keys(laptop).requestEnrolment(code: second.code, in: laptop.container)
            let secondRecord = try await phone.container.privateCloudDatabase.record(
                for: Record.ID(recordName: "enrol-" + Self.offerName(second), zoneID: ZoneID(zoneName: "NimbusKeys")))
            let request = try #require(secondRecord.fieldValue(forKey: "request"))
            #expect(try await Self.keys(phone).answerEnrolment(second, in: phone.container))
            var replayed = try await phone.container.privateCloudDatabase.record(for: secondRecord.id)
            replayed.setFieldValue(nil, forKey: "answer")
            _ = try await phone.container.privateCloudDatabase.save(replayed)
            #expect(await EncryptedValuesTests.code { _ = try await Self.keys(phone).answerEnrolment(second, in: phone.container) } == .invalidArguments)
            let third = try await Self.keys(phone).offerEnrolment(in: phone.container)
            var thirdRecord = try await phone.container.privateCloudDatabase.record(
                for: Record.ID(recordName: "enrol-" + Self.offerName(third), zoneID: ZoneID(zoneName: "NimbusKeys")))
            thirdRecord.setFieldValue(request, forKey: "request")
            _ = try await phone.container.privateCloudDatabase.save(thirdRecord)
            #expect(await EncryptedValuesTests.code { _ = try await Self.keys(phone).answerEnrolment(third, in: phone.container) } == .decryptionFailed)
        }
    }

    @Test(arguments: Engine.available)
    func aRevokedDeviceLeavesTheDirectoryReadsNothingNewAndIsNotEnrolledAgain(engine: Engine) async throws {
        try await LiveServer.with(engine: engine) { live in
            let phone = try await EncryptedValuesTests.device(live, user: "alice")
            let oldRecovery = try #require(try await Self.keys(phone).setUp(in: phone.container))
            try await phone.database.save(RecordZone(zoneID: Self.zone))
            let e1 = try await phone.database.save(EncryptedValuesTests.entry("e1", body: "MARKER-before"))
            let tablet = try await EncryptedValuesTests.device(live, user: "alice")
            try await Self.enrol(tablet, through: phone)
            let laptop = try await EncryptedValuesTests.device(live, user: "alice")
            try await Self.keys(laptop).restore(recoveryKey: oldRecovery.text, in: laptop.container)
            #expect(try await tablet.database.record(for: e1.id).encryptedValues["body"] as String? == "MARKER-before")
            let user = try await phone.container.userRecordID().recordName
            let tabletKey = try await Self.keys(tablet).devicePublicKey(in: tablet.container)

            #expect(await EncryptedValuesTests.code { _ = try await Self.keys(phone).revokeDevice(publicKey: Self.keys(phone).devicePublicKey(in: phone.container), in: phone.container) } == .invalidArguments)
            let recovery = try await Self.keys(phone).revokeDevice(publicKey: tabletKey, in: phone.container)
            let directory = try #require(try await Self.keys(phone).publishedKeys(of: user, in: phone.container))
            #expect(!directory.devices.contains(tabletKey))
            #expect(directory.revokedDevices == [tabletKey])
            #expect(directory.devices.count == 2)

            // Written after: a new zone key, which the revoked tablet cannot open.
            let e2 = try await phone.database.save(EncryptedValuesTests.entry("e2", body: "MARKER-after"))
            let before = try #require(try await EncryptedValuesTests.rawFields(live, phone, "e1")?["body"]?["value"]?.string)
            let after = try #require(try await EncryptedValuesTests.rawFields(live, phone, "e2")?["body"]?["value"]?.string)
            #expect(FieldSealing.keyID(of: Array(Data(base64Encoded: before)!)) != FieldSealing.keyID(of: Array(Data(base64Encoded: after)!)))
            // The tablet learns it was revoked from the new key it cannot get.
            #expect(await EncryptedValuesTests.code { _ = try await tablet.database.record(for: e2.id) } == .permissionFailure)
            #expect(await EncryptedValuesTests.code { _ = try await Self.keys(tablet).setUp(in: tablet.container) } == .permissionFailure)

            // The laptop takes the new account key at its next setUp and reads old and new.
            #expect(try await Self.keys(laptop).setUp(in: laptop.container) == nil)
            #expect(try await laptop.database.record(for: e1.id).encryptedValues["body"] as String? == "MARKER-before")
            #expect(try await laptop.database.record(for: e2.id).encryptedValues["body"] as String? == "MARKER-after")

            // The old recovery key opens nothing any more; the new one does.
            let spare = try await EncryptedValuesTests.device(live, user: "alice")
            #expect(await EncryptedValuesTests.code { try await Self.keys(spare).restore(recoveryKey: oldRecovery.text, in: spare.container) } == .decryptionFailed)
            try await Self.keys(spare).restore(recoveryKey: recovery.text, in: spare.container)
            #expect(try await spare.database.record(for: e2.id).encryptedValues["body"] as String? == "MARKER-after")

            // The revoked tablet's enrolment is refused, clearly, on both sides.
            let offer = try await Self.keys(phone).offerEnrolment(in: phone.container)
            let ticket = try await Self.keys(tablet).requestEnrolment(code: offer.code, in: tablet.container)
            #expect(await EncryptedValuesTests.code { _ = try await Self.keys(phone).answerEnrolment(offer, in: phone.container) } == .permissionFailure)
            #expect(await EncryptedValuesTests.code { _ = try await Self.keys(tablet).completeEnrolment(ticket, in: tablet.container) } == .permissionFailure)
        }
    }

    static func offerName(_ invitation: EnrolmentInvitation) -> String {
        invitation.offerID.map { String(format: "%02x", $0) }.joined()
    }
}
