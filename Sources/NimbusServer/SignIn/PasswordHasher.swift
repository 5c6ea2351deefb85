import HummingbirdBcrypt
import NIOConcurrencyHelpers
import NIOPosix
import NimbusProtocol
import NimbusStore

/// Hashes and checks built-in accounts' passwords with bcrypt, on NIO's thread pool (a
/// hash takes tens of milliseconds of CPU, too long for the cooperative pool).
package struct PasswordHasher: Sendable {
    package let cost: UInt8
    /// A hash of a password nobody knows, checked when there is no account so that an
    /// unknown address takes as long as a wrong password; made on first need.
    private let decoy = NIOLockedValueBox<String?>(nil)

    /// A hasher of `cost`, kept within 10 to 31 (bcrypt takes no more than 31).
    package init(cost: UInt8) {
        self.cost = min(max(cost, 10), 31)
    }

    package func hash(_ password: String) async throws -> String {
        let cost = cost
        return try await NIOThreadPool.singleton.runIfActive { Bcrypt.hash(password, cost: cost) }
    }

    /// Whether `password` matches `hash`; with no hash, checks the decoy (and says no).
    package func verify(_ password: String, hash: String?) async throws -> Bool {
        let (cost, decoy) = (cost, decoy)
        return try await NIOThreadPool.singleton.runIfActive {
            guard let hash else {
                let target = decoy.withLockedValue { value in
                    if let value { return value }
                    let made = Bcrypt.hash(RandomToken.hex(bytes: 16), cost: cost)
                    value = made
                    return made
                }
                _ = Bcrypt.verify(password, hash: target)
                return false
            }
            return Bcrypt.verify(password, hash: hash)
        }
    }

    /// Checks a new password: 8 to 72 bytes (bcrypt reads no further than 72).
    package static func check(_ password: String) throws(CloudKitError) {
        guard password.utf8.count >= 8, password.utf8.count <= 72 else {
            throw .badRequest("a password is 8 to 72 bytes long; choose another")
        }
    }
}
