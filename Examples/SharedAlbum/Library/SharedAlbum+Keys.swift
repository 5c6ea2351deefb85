import Foundation
import Nimbus

/// The album's end-to-end encryption: captions are sealed on the device
/// (``AlbumSchema/encryptedFields``), opened on the devices of the owner and of the people an
/// album is shared with. Each user sets up keys on a first device, and enrols their other
/// devices with a short code (docs/ENCRYPTION.md).
///
/// ```swift
/// // The user's first device:
/// if let recovery = try await phone.setUpKeys() { show(recovery.text) }
/// // Another device of the same user:
/// let invitation = try await phone.offerEnrolment()        // phone shows invitation.code
/// let ticket = try await laptop.requestEnrolment(code: typed)
/// _ = try await phone.answerEnrolment(invitation)
/// _ = try await laptop.completeEnrolment(ticket)
/// ```
extension SharedAlbum {
    /// This user's encryption keys on the device.
    var keys: EncryptionKeys {
        get throws {
            guard let keys = container.encryption else {
                throw NimbusError(.encryptionKeysMissing, "this device was opened without a key store")
            }
            return keys
        }
    }

    /// Makes this device ready to seal and open captions and publishes the user's sharing key
    /// (others can then share albums with encrypted captions with them). On the user's first
    /// device returns the recovery key to write down; `nil` on a device set up already.
    /// - Throws: ``NimbusError/Code/encryptionKeysMissing`` on another device of the user:
    ///   enrol it (``requestEnrolment(code:)``) or restore it (``restoreKeys(recoveryKey:)``).
    @discardableResult
    public func setUpKeys() async throws -> RecoveryKey? {
        try await keys.setUp(in: container)
    }

    /// Restores the keys on this device from the recovery key the user wrote down.
    public func restoreKeys(recoveryKey: String) async throws {
        try await keys.restore(recoveryKey: recoveryKey, in: container)
    }

    /// On a device with keys: offers the enrolment of another device of the user; show the code.
    public func offerEnrolment() async throws -> EnrolmentInvitation {
        try await keys.offerEnrolment(in: container)
    }

    /// On the new device: asks for the keys with the code the user typed.
    public func requestEnrolment(code: String) async throws -> EnrolmentTicket {
        try await keys.requestEnrolment(code: code, in: container)
    }

    /// On the offering device: answers the new device's request (`false`: none yet).
    public func answerEnrolment(_ invitation: EnrolmentInvitation) async throws -> Bool {
        try await keys.answerEnrolment(invitation, in: container)
    }

    /// On the new device: takes the keys from the answer (`false`: not answered yet).
    public func completeEnrolment(_ ticket: EnrolmentTicket) async throws -> Bool {
        try await keys.completeEnrolment(ticket, in: container)
    }
}
