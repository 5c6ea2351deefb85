import Foundation
import NimbusCrypto
import Testing

/// A new device enrols through an existing one with a short code; the server in the middle
/// can neither read the account key nor hand the new device a key of its own.
@Suite("Enrolment by code")
struct EnrolmentTests {
    static let (user, container) = ("_alice", "iCloud.com.example.album")
    static let now = Date(timeIntervalSince1970: 1_795_240_000)

    @Test func aNewDeviceWithTheCodeReceivesTheAccountKey() throws {
        let account = KeyAgreementIdentity()
        var offer = EnrolmentOffer(now: Self.now)
        #expect(offer.code.count == 10)
        let device = KeyAgreementIdentity()
        let typed = offer.code.lowercased()
        let request = try EnrolmentRequest(offerID: offer.id, code: typed, device: device)
        let answer = try offer.answer(request, account: account, user: Self.user, container: Self.container, now: Self.now)
        let received = try answer.open(request: request, code: typed, device: device, user: Self.user, container: Self.container)
        #expect(received.publicBytes == account.publicBytes)
        #expect(!answer.wrapped.bytes.containsSubsequence(account.privateBytes))
        // Replayed: the offer answers once.
        #expect(FieldSealingTests.code {
            _ = try offer.answer(request, account: account, user: Self.user, container: Self.container, now: Self.now)
        } == .enrolmentExpired)
    }

    @Test func aRequestWithoutTheCodeOrLateIsRefused() throws {
        let account = KeyAgreementIdentity()
        var offer = EnrolmentOffer(now: Self.now)
        let wrongCode = offer.code == "0000000000" ? "1111111111" : "0000000000"
        let guess = try EnrolmentRequest(offerID: offer.id, code: wrongCode, device: KeyAgreementIdentity())
        #expect(FieldSealingTests.code {
            _ = try offer.answer(guess, account: account, user: Self.user, container: Self.container, now: Self.now)
        } == .authenticationFailed)
        // The server swaps the device's public key for its own: the MAC no longer matches.
        let device = KeyAgreementIdentity()
        let honest = try EnrolmentRequest(offerID: offer.id, code: offer.code, device: device)
        let swapped = EnrolmentRequest(offerID: offer.id, devicePublicKey: KeyAgreementIdentity().publicBytes, mac: honest.mac)
        #expect(FieldSealingTests.code {
            _ = try offer.answer(swapped, account: account, user: Self.user, container: Self.container, now: Self.now)
        } == .authenticationFailed)
        // After ten minutes the offer is spent.
        #expect(FieldSealingTests.code {
            _ = try offer.answer(
                honest, account: account, user: Self.user, container: Self.container, now: Self.now.addingTimeInterval(601))
        } == .enrolmentExpired)
        #expect(FieldSealingTests.code { _ = try EnrolmentRequest(offerID: offer.id, code: "short", device: device) } == .malformed)
    }

    /// The server answers the new device with an account key of its own, sealed to the
    /// device's public key: without the code it cannot make the MAC.
    @Test func aServerCannotHandTheNewDeviceAKeyOfItsOwn() throws {
        var offer = EnrolmentOffer(now: Self.now)
        let device = KeyAgreementIdentity()
        let request = try EnrolmentRequest(offerID: offer.id, code: offer.code, device: device)
        let genuine = try offer.answer(
            request, account: KeyAgreementIdentity(), user: Self.user, container: Self.container, now: Self.now)
        let forged = EnrolmentAnswer(
            wrapped: try WrappedKey.wrap(
                secret: KeyAgreementIdentity().privateBytes, to: device.publicBytes,
                context: ["enrol", Self.container, Self.user, offer.id.map { String(format: "%02x", $0) }.joined()]),
            mac: genuine.mac)
        #expect(FieldSealingTests.code {
            _ = try forged.open(request: request, code: offer.code, device: device, user: Self.user, container: Self.container)
        } == .authenticationFailed)
        // Another device (which did not make the request) cannot open the genuine answer.
        #expect(FieldSealingTests.code {
            _ = try genuine.open(
                request: request, code: offer.code, device: KeyAgreementIdentity(), user: Self.user, container: Self.container)
        } == .authenticationFailed)
    }
}
