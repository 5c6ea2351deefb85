import Foundation
import NimbusProtocol

/// A user's entry in the public key directory: the public keys others need to share with them,
/// and the devices they enrolled or revoked (docs/ENCRYPTION.md, "The key directory"). Public
/// keys only: the server, and everyone who reads it, can decrypt nothing with it.
///
/// ```swift
/// if let bob = try await container.encryption!.publishedKeys(of: bobsRecordName, in: container) {
///     print(bob.devices.count)      // Bob's enrolled devices
/// }
/// ```
public struct PublishedKeys: Sendable, Equatable {
    /// The user's record name.
    public let user: String
    /// The public half of the user's account key: what an owner wraps a zone key to when
    /// sharing with this user.
    public let sharingKey: [UInt8]
    /// The public keys of the user's enrolled devices.
    public let devices: [[UInt8]]
    /// The public keys of the devices the user revoked: never enrolled again.
    public let revokedDevices: [[UInt8]]
}

/// The directory's records: one record per user, `keys-<user record name>` of type
/// `NimbusUserKeys` in the public database's default zone. Everyone reads it; the server lets
/// only the user it names create or change it (`KeyDirectoryRules`); a reader still accepts
/// an entry only when its creator is the user it names.
enum KeyDirectory {
    static let recordType = "NimbusUserKeys"

    static func recordID(_ user: String) -> Record.ID { Record.ID(recordName: "keys-" + user) }

    /// The entry of `user` and its record; `nil` when the user published none.
    /// - Throws: ``NimbusError/Code/decryptionFailed`` for an entry someone else created.
    static func entry(of user: String, in container: Container) async throws -> (keys: PublishedKeys, record: Record)? {
        let record: Record
        do {
            record = try await container.publicCloudDatabase.record(for: recordID(user))
        } catch let error as NimbusError where error.code == .unknownItem {
            return nil
        }
        guard record.recordType == recordType, record.creatorUserRecordName == user,
            let sharing = record.fieldValue(forKey: "sharingKey")?.bytesValue, sharing.count == 32
        else {
            throw NimbusError(
                .decryptionFailed,
                "the key directory's entry for '\(user)' was not published by that user; nothing is wrapped to it")
        }
        let keys = PublishedKeys(
            user: user, sharingKey: Array(sharing), devices: list(record, "devices"),
            revokedDevices: list(record, "revokedDevices"))
        return (keys, record)
    }

    /// Publishes `keys` (over `existing`, the entry as fetched, when there is one).
    static func publish(_ keys: PublishedKeys, over existing: Record?, in container: Container) async throws {
        var record = existing ?? Record(recordType: recordType, recordID: recordID(keys.user))
        record["sharingKey"] = Data(keys.sharingKey)
        record.setFieldValue(.list(elementType: .bytes, keys.devices.map { .bytes(Data($0)) }), forKey: "devices")
        record.setFieldValue(
            .list(elementType: .bytes, keys.revokedDevices.map { .bytes(Data($0)) }), forKey: "revokedDevices")
        try await container.publicCloudDatabase.save(record)
    }

    private static func list(_ record: Record, _ field: String) -> [[UInt8]] {
        guard case .list(_, let values)? = record.fieldValue(forKey: field) else { return [] }
        return values.compactMap { $0.bytesValue.map(Array.init) }
    }
}
