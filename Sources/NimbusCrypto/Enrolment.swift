import Crypto
import Foundation
import _CryptoExtras

/// A new device joins through one that already holds the account key, with a short code the
/// user reads on one and types on the other. The messages travel through the server, which
/// learns nothing it can use: each is authenticated with a key stretched from the code by
/// scrypt (about 2^50 codes, each guess costing scrypt's 32 MiB and tens of milliseconds), and
/// the account key itself travels sealed to the new device's public key.
///
/// ```swift
/// // Existing device: show the code, post the offer's ID.
/// var offer = EnrolmentOffer(now: .now)
/// show(offer.code)
/// // New device: the user types the code.
/// let device = KeyAgreementIdentity()
/// let request = try EnrolmentRequest(offerID: offer.id, code: typed, device: device)
/// // Existing device, on receiving the request through the server:
/// let answer = try offer.answer(request, account: account, user: me, container: c, now: .now)
/// // New device:
/// let account = try answer.open(request: request, code: typed, device: device, user: me, container: c)
/// ```
public struct EnrolmentOffer: Sendable {
    /// The offer's random ID: where the server keeps its messages.
    public let id: [UInt8]
    /// What the user types on the new device: 10 characters of Crockford base32 (50 bits).
    public let code: String
    public let expiresAt: Date
    /// Whether a request was answered already: an offer answers one device, once.
    public private(set) var isUsed = false

    public init(now: Date, lifetime: TimeInterval = 600) {
        id = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let random = (0..<7).map { _ in UInt8.random(in: 0...255) }
        code = String(Base32.encode(random).prefix(10))
        expiresAt = now.addingTimeInterval(lifetime)
    }

    /// Checks a new device's request and answers it with the account key sealed to that device.
    /// - Throws: `.enrolmentExpired` for an offer past its time or answered already;
    ///   `.authenticationFailed` for a request made without the code (or for another offer).
    public mutating func answer(
        _ request: EnrolmentRequest, account: KeyAgreementIdentity, user: String, container: String, now: Date
    ) throws(EncryptionError) -> EnrolmentAnswer {
        guard !isUsed, now < expiresAt else {
            throw EncryptionError(.enrolmentExpired, "this enrolment offer expired or was used; show a new code")
        }
        let key = try EnrolmentCode.key(code: code, offerID: id)
        guard request.offerID == id, EnrolmentCode.verify(request.mac, key, ["request", hex(id)], request.devicePublicKey)
        else { throw .tampered("the enrolment request") }
        isUsed = true
        let wrapped: WrappedKey
        do {
            wrapped = try WrappedKey.wrap(
                secret: account.privateBytes, to: request.devicePublicKey,
                context: EnrolmentCode.context(id, user: user, container: container))
        } catch {
            throw EncryptionError(.malformed, "the new device's public key is not a Curve25519 key")
        }
        let mac = EnrolmentCode.mac(key, ["answer", hex(id)], request.devicePublicKey + wrapped.bytes)
        return EnrolmentAnswer(wrapped: wrapped, mac: mac)
    }
}

/// The new device's half: its public key, authenticated with the code.
public struct EnrolmentRequest: Sendable, Equatable {
    public let offerID: [UInt8]
    public let devicePublicKey: [UInt8]
    public let mac: [UInt8]

    public init(offerID: [UInt8], devicePublicKey: [UInt8], mac: [UInt8]) {
        self.offerID = offerID
        self.devicePublicKey = devicePublicKey
        self.mac = mac
    }

    /// The request of `device`, which the user gave `code`.
    public init(offerID: [UInt8], code: String, device: KeyAgreementIdentity) throws(EncryptionError) {
        let key = try EnrolmentCode.key(code: code, offerID: offerID)
        self.init(
            offerID: offerID, devicePublicKey: device.publicBytes,
            mac: EnrolmentCode.mac(key, ["request", hex(offerID)], device.publicBytes))
    }
}

/// The existing device's answer: the account key sealed to the new device, authenticated
/// with the code so that the server cannot hand the new device a key of its own.
public struct EnrolmentAnswer: Sendable, Equatable {
    public let wrapped: WrappedKey
    public let mac: [UInt8]

    public init(wrapped: WrappedKey, mac: [UInt8]) {
        self.wrapped = wrapped
        self.mac = mac
    }

    /// The account key, on the new device that sent `request`.
    public func open(request: EnrolmentRequest, code: String, device: KeyAgreementIdentity, user: String, container: String)
        throws(EncryptionError) -> KeyAgreementIdentity
    {
        let key = try EnrolmentCode.key(code: code, offerID: request.offerID)
        guard request.devicePublicKey == device.publicBytes,
            EnrolmentCode.verify(mac, key, ["answer", hex(request.offerID)], device.publicBytes + wrapped.bytes)
        else { throw .tampered("the enrolment answer") }
        let secret = try wrapped.unwrap(
            with: device, context: EnrolmentCode.context(request.offerID, user: user, container: container))
        return try KeyAgreementIdentity(privateBytes: secret)
    }
}

/// The key both devices stretch from the code, and the MACs it makes.
enum EnrolmentCode {
    /// scrypt's cost: N = 2^15, r = 8, p = 1 (32 MiB).
    static let rounds = 1 << 15

    static func key(code: String, offerID: [UInt8]) throws(EncryptionError) -> SymmetricKey {
        guard let normalized = Base32.normalized(code), normalized.count == 10 else {
            throw EncryptionError(.malformed, "an enrolment code is 10 characters of 0-9 and A-Z; check it")
        }
        do {
            return try KDF.Scrypt.deriveKey(
                from: Array(normalized.utf8), salt: Array("nimbus.enrol.v1".utf8) + offerID, outputByteCount: 32,
                rounds: rounds, blockSize: 8, parallelism: 1)
        } catch {
            throw EncryptionError(.malformed, "scrypt failed: \(error)")
        }
    }

    static func context(_ offerID: [UInt8], user: String, container: String) -> [String] {
        ["enrol", container, user, hex(offerID)]
    }

    static func mac(_ key: SymmetricKey, _ label: [String], _ message: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Binding("nimbus.enrol.v1", label).appending(message).bytes, using: key))
    }

    static func verify(_ mac: [UInt8], _ key: SymmetricKey, _ label: [String], _ message: [UInt8]) -> Bool {
        ConstantTime.equal(mac, Self.mac(key, label, message))
    }
}
