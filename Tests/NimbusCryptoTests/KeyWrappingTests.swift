import Crypto
import Foundation
import NimbusCrypto
import Testing

/// Keys travel wrapped to one recipient, for one context; recovery keys restore an account.
@Suite("Key wrapping and recovery")
struct KeyWrappingTests {
    static let context = ["zone", "iCloud.com.example.album", "Album", "_alice", "_bob"]

    @Test func aZoneKeyWrappedForBobOpensForBobOnly() throws {
        let bob = KeyAgreementIdentity()
        let carol = KeyAgreementIdentity()
        let key = ZoneKey()
        let wrapped = try WrappedKey.wrap(key, to: bob.publicBytes, context: Self.context)
        #expect(!wrapped.bytes.containsSubsequence(Array(key.id)), "the key ID travels sealed too")
        #expect(try wrapped.unwrapZoneKey(with: bob, context: Self.context) == key)
        #expect(FieldSealingTests.code { _ = try wrapped.unwrapZoneKey(with: carol, context: Self.context) } == .authenticationFailed)
        var otherZone = Self.context
        otherZone[2] = "Other"
        #expect(FieldSealingTests.code { _ = try wrapped.unwrapZoneKey(with: bob, context: otherZone) } == .authenticationFailed)
        for index in stride(from: 1, to: wrapped.bytes.count, by: 7) {
            var altered = wrapped.bytes
            altered[index] ^= 1
            #expect(FieldSealingTests.code { _ = try WrappedKey(bytes: altered).unwrapZoneKey(with: bob, context: Self.context) } == .authenticationFailed)
        }
        #expect(FieldSealingTests.code { _ = try WrappedKey(bytes: Array(wrapped.bytes.prefix(40))).unwrap(with: bob, context: Self.context) } == .malformed)
        // A stored identity reads as itself.
        let restored = try KeyAgreementIdentity(privateBytes: bob.privateBytes)
        #expect(try wrapped.unwrapZoneKey(with: restored, context: Self.context) == key)
    }

    @Test func aRecoveryKeyRestoresTheAccountKeyAndNoOtherKeyDoes() throws {
        let account = KeyAgreementIdentity()
        let recovery = RecoveryKey()
        let text = recovery.text
        #expect(text.count == 52 + 12, "52 characters in groups of four: \(text)")
        let sealed = try recovery.seal(account, user: "_alice", container: "iCloud.com.example.album")
        // Typed back with other case, spaces and the look-alike letters.
        let typed = text.lowercased().replacingOccurrences(of: "-", with: " ").replacingOccurrences(of: "0", with: "o")
        let restored = try RecoveryKey(text: typed).open(sealed, user: "_alice", container: "iCloud.com.example.album")
        #expect(restored.publicBytes == account.publicBytes)
        #expect(FieldSealingTests.code { _ = try RecoveryKey().open(sealed, user: "_alice", container: "iCloud.com.example.album") } == .authenticationFailed)
        #expect(FieldSealingTests.code { _ = try recovery.open(sealed, user: "_bob", container: "iCloud.com.example.album") } == .authenticationFailed)
        #expect(FieldSealingTests.code { _ = try RecoveryKey(text: "not a key") } == .malformed)
        #expect(FieldSealingTests.code { _ = try RecoveryKey(text: String(text.dropLast(2))) } == .malformed)
    }
}

/// Zone keys in the owner's key directory: only the account key makes or opens them.
@Suite("Self-wrapped zone keys")
struct SelfWrappedKeyTests {
    @Test func onlyTheAccountKeyForTheSameContextOpensIt() throws {
        let account = KeyAgreementIdentity()
        let key = ZoneKey()
        let context = ["zone", "iCloud.c", "Album", "_alice"]
        let sealed = try SelfWrappedKey.wrap(key, account: account, context: context)
        #expect(try SelfWrappedKey.unwrap(sealed, account: account, context: context) == key)
        #expect(FieldSealingTests.code { _ = try SelfWrappedKey.unwrap(sealed, account: KeyAgreementIdentity(), context: context) } == .authenticationFailed)
        #expect(FieldSealingTests.code { _ = try SelfWrappedKey.unwrap(sealed, account: account, context: ["zone", "iCloud.c", "Other", "_alice"]) } == .authenticationFailed)
        // Made with the public key alone (as a server could): it does not open.
        let forged = try WrappedKey.wrap(key, to: account.publicBytes, context: context).bytes
        #expect(FieldSealingTests.code { _ = try SelfWrappedKey.unwrap(forged, account: account, context: context) } != nil)
        for index in sealed.indices {
            var altered = sealed
            altered[index] ^= 1
            #expect(FieldSealingTests.code { _ = try SelfWrappedKey.unwrap(altered, account: account, context: context) } != nil)
        }
    }
}
