/// Why a sealed value, file, wrapped key or enrolment could not be opened or made. Nothing
/// is ever decrypted wrongly: every failure is one of these, and the caller's data is left
/// as it was.
public struct EncryptionError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// The bytes are not an envelope of this format (too short, a field missing).
        case malformed
        /// A version this build does not read: update the app.
        case unsupportedVersion
        /// The authentication tag does not match: altered, truncated, re-ordered, bound to
        /// another record, field, zone, user or device, or sealed with another key.
        case authenticationFailed
        /// Sealed with a key this device does not hold (another zone key, a rotated one not
        /// fetched yet): fetch the zone's keys, or enrol this device.
        case unknownKey
        /// An enrolment offer that expired or was used already.
        case enrolmentExpired
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }

    static func tampered(_ what: String) -> Self {
        Self(
            .authenticationFailed,
            "\(what) does not authenticate: it was altered, cut short, moved from another record or field, or sealed "
                + "with another key; nothing was decrypted")
    }
}
