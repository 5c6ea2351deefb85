import Foundation
import NimbusCrypto
import NimbusProtocol

/// What a device that holds the account key shows to enrol a new one: the code the user types
/// there (``EncryptionKeys/offerEnrolment(in:now:)``).
public struct EnrolmentInvitation: Sendable {
    /// The 10 characters the user types on the new device.
    public let code: String
    /// After this, the offer answers nothing: show a new code.
    public let expiresAt: Date
    /// The offer's random ID: its messages wait in the record `enrol-<hex of the ID>`.
    public let offerID: [UInt8]
}

/// A new device's request to enrol, waiting for the answer
/// (``EncryptionKeys/requestEnrolment(code:in:now:)``).
public struct EnrolmentTicket: Sendable {
    let request: EnrolmentRequest
    let code: String
}

/// Enrolment of a new device by a short code, through the server (docs/ENCRYPTION.md,
/// "Enrolment by code"). The messages are records of type `NimbusEnrolment` in the user's
/// private key directory; the server sees a public key, two MACs and an account key wrapped
/// to that public key, none of which it can use.
///
/// ```swift
/// // The device that has the keys:
/// let invitation = try await keys.offerEnrolment(in: container)
/// show(invitation.code)
/// // The new device, once the user typed the code:
/// let ticket = try await newKeys.requestEnrolment(code: typed, in: newContainer)
/// // The first device (on a push, or when the user taps "continue"):
/// _ = try await keys.answerEnrolment(invitation, in: container)
/// // The new device:
/// _ = try await newKeys.completeEnrolment(ticket, in: newContainer)
/// ```
extension EncryptionKeys {
    static let enrolmentRecordType = "NimbusEnrolment"

    /// Offers the enrolment of a new device: returns the code to show. The offer answers one
    /// request, once, within 10 minutes; a request made with a wrong code spends it.
    public func offerEnrolment(in container: Container, now: Date = Date()) async throws -> EnrolmentInvitation {
        _ = try await accountKey(in: container, required: true)
        let offer = EnrolmentOffer(now: now)
        var record = Record(recordType: Self.enrolmentRecordType, recordID: Self.enrolmentRecordID(offer.id))
        record["offer"] = Data(offer.id)
        record["expiresAt"] = Int64(offer.expiresAt.timeIntervalSince1970 * 1000)
        try await container.privateCloudDatabase.save(RecordZone(zoneID: Self.keysZone))
        try await container.privateCloudDatabase.save(record)
        enrolmentOffers[hexString(offer.id)] = offer
        return EnrolmentInvitation(code: offer.code, expiresAt: offer.expiresAt, offerID: offer.id)
    }

    /// On the new device: sends the request of this device for the offer waiting in the
    /// directory, made with the `code` the user typed.
    /// - Throws: ``NimbusError/Code/invalidArguments`` for a code that is not 10 characters
    ///   of 0-9 and A-Z, or when no offer is waiting.
    public func requestEnrolment(code: String, in container: Container, now: Date = Date()) async throws -> EnrolmentTicket {
        let user = try await user(of: container)
        let device = try deviceIdentity(user: user, in: container)
        let waiting = try await directoryRecords(in: container).filter { record in
            record.recordType == Self.enrolmentRecordType && record.fieldValue(forKey: "request") == nil
                && record.fieldValue(forKey: "refused") == nil
                && (record.fieldValue(forKey: "expiresAt")?.int64Value ?? 0) > Int64(now.timeIntervalSince1970 * 1000)
        }
        guard var record = waiting.max(by: { ($0.creationDate ?? .distantPast) < ($1.creationDate ?? .distantPast) }),
            let offerID = record.fieldValue(forKey: "offer")?.bytesValue
        else {
            throw NimbusError(
                .invalidArguments,
                "no enrolment offer is waiting: on a device that has this account's keys, offer an enrolment and type "
                    + "the code it shows")
        }
        let request: EnrolmentRequest
        do {
            request = try EnrolmentRequest(offerID: Array(offerID), code: code, device: device)
        } catch {
            throw NimbusError(.invalidArguments, error.message)
        }
        record["request"] = Data(request.devicePublicKey + request.mac)
        do {
            try await container.privateCloudDatabase.save(record)
        } catch let error as NimbusError where error.code == .serverRecordChanged {
            throw NimbusError(.invalidArguments, "another device answered this enrolment offer first: show a new code")
        }
        return EnrolmentTicket(request: request, code: code)
    }

    /// On the device that made the offer: answers the request waiting for it with the account
    /// key sealed to the new device, and lists that device in the key directory. `false` when
    /// no request has arrived yet.
    /// - Throws: ``NimbusError/Code/decryptionFailed`` for a request made with another code
    ///   (the offer is spent); ``NimbusError/Code/invalidArguments`` for an offer that expired
    ///   or was answered already (a replayed request); ``NimbusError/Code/permissionFailure``
    ///   for a device the user revoked. Nothing is sent in any of these cases.
    public func answerEnrolment(_ invitation: EnrolmentInvitation, in container: Container, now: Date = Date())
        async throws -> Bool
    {
        let user = try await user(of: container)
        guard let account = try await accountKey(in: container, required: true) else { return false }
        let id = hexString(invitation.offerID)
        guard var offer = enrolmentOffers[id] else {
            throw NimbusError(.invalidArguments, "this device made no such enrolment offer (or it was spent): show a new code")
        }
        var record = try await container.privateCloudDatabase.record(for: Self.enrolmentRecordID(invitation.offerID))
        guard let bytes = record.fieldValue(forKey: "request")?.bytesValue else { return false }
        guard bytes.count == 64 else {
            throw try await refuse(&record, .decryptionFailed, "the enrolment request is not a key and a MAC", in: container)
        }
        let request = EnrolmentRequest(
            offerID: invitation.offerID, devicePublicKey: Array(bytes.prefix(32)), mac: Array(bytes.suffix(32)))
        if try await KeyDirectory.entry(of: user, in: container)?.keys.revokedDevices.contains(request.devicePublicKey)
            == true
        {
            enrolmentOffers[id] = nil
            throw try await refuse(&record, .permissionFailure, Self.revoked().message, in: container)
        }
        let answer: EnrolmentAnswer
        do {
            answer = try offer.answer(request, account: account, user: user, container: container.identifier, now: now)
        } catch {
            if error.code == .enrolmentExpired {
                throw NimbusError(.invalidArguments, error.message)
            }
            enrolmentOffers[id] = nil
            throw try await refuse(
                &record, .decryptionFailed,
                "the enrolment request was not made with this code (a wrong code, or a request for another offer): "
                    + "nothing was sent; show a new code", in: container)
        }
        enrolmentOffers[id] = offer
        record["answer"] = Data(answer.wrapped.bytes + answer.mac)
        try await container.privateCloudDatabase.save(record)
        try await register(device: request.devicePublicKey, account: account, user: user, in: container)
        return true
    }

    /// On the new device: opens the answer and keeps the account key. `false` when the offer
    /// has not been answered yet.
    /// - Throws: the error the other device refused the request with
    ///   (``NimbusError/Code/decryptionFailed`` for a wrong code,
    ///   ``NimbusError/Code/permissionFailure`` for a revoked device), or
    ///   ``NimbusError/Code/decryptionFailed`` for an answer that does not authenticate with
    ///   the code (nothing is stored).
    public func completeEnrolment(_ ticket: EnrolmentTicket, in container: Container) async throws -> Bool {
        let user = try await user(of: container)
        let recordID = Self.enrolmentRecordID(ticket.request.offerID)
        let record = try await container.privateCloudDatabase.record(for: recordID)
        if let reason = record.fieldValue(forKey: "refused")?.stringValue {
            let code = record.fieldValue(forKey: "refusedCode")?.stringValue.map { NimbusError.Code(rawValue: $0) } ?? .decryptionFailed
            throw NimbusError(code, "the other device refused this enrolment: \(reason)")
        }
        guard let bytes = record.fieldValue(forKey: "answer")?.bytesValue else { return false }
        guard bytes.count > 32 else { throw NimbusError(.decryptionFailed, "the enrolment answer is cut short") }
        let answer = EnrolmentAnswer(wrapped: WrappedKey(bytes: Array(bytes.dropLast(32))), mac: Array(bytes.suffix(32)))
        let device = try deviceIdentity(user: user, in: container)
        let account: KeyAgreementIdentity
        do {
            account = try answer.open(
                request: ticket.request, code: ticket.code, device: device, user: user, container: container.identifier)
        } catch {
            throw NimbusError(.decryptionFailed, "the enrolment answer does not open on this device: \(error.message)")
        }
        guard let published = try await accountRecord(in: container.privateCloudDatabase),
            published.fieldValue(forKey: "publicKey")?.bytesValue == Data(account.publicBytes)
        else {
            throw NimbusError(.decryptionFailed, "the enrolment answer holds a key that is not this account's published key")
        }
        try adopt(account, user: user, in: container)
        _ = try await container.privateCloudDatabase.deleteRecord(withID: recordID)
        return true
    }

    static func enrolmentRecordID(_ offerID: [UInt8]) -> Record.ID {
        Record.ID(recordName: "enrol-" + hexString(offerID), zoneID: keysZone)
    }

    /// Marks a request refused (so the new device learns why) and returns the error to throw.
    private func refuse(_ record: inout Record, _ code: NimbusError.Code, _ reason: String, in container: Container)
        async throws -> NimbusError
    {
        record["refused"] = reason
        record["refusedCode"] = code.rawValue
        try await container.privateCloudDatabase.save(record)
        return NimbusError(code, reason)
    }
}
