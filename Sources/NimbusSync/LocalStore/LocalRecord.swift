import Foundation
import NimbusProtocol

/// A record as the device sees it: the server's last copy with the device's pending change
/// applied.
public struct LocalRecord: Sendable, Hashable {
    public var zoneName: String
    public var recordName: String
    public var recordType: String
    public var fields: [String: FieldValue]
    /// The server's change tag of the copy this record is based on (nil if never on the server).
    public var serverChangeTag: String?
    /// A change of this device is waiting to be sent.
    public var isPending: Bool
    /// The name of the record this one belongs under, in the same zone (the SDK's
    /// ``Nimbus/Record/parent``): a record whose parent chain reaches a shared root is shared
    /// with it. Saving a record with no parent keeps the one the server has.
    ///
    /// ```swift
    /// var photo = LocalRecord(zoneName: zone, recordName: id, recordType: "Photo", fields: fields)
    /// photo.parent = album.recordName
    /// ```
    public var parent: String?

    public init(
        zoneName: String, recordName: String, recordType: String, fields: [String: FieldValue],
        serverChangeTag: String? = nil, isPending: Bool = false, parent: String? = nil
    ) {
        self.parent = parent
        self.zoneName = zoneName
        self.recordName = recordName
        self.recordType = recordType
        self.fields = fields
        self.serverChangeTag = serverChangeTag
        self.isPending = isPending
    }

    public subscript(field: String) -> FieldValue? {
        get { fields[field] }
        set { fields[field] = newValue }
    }
}

/// One pending change in the outbox.
public struct PendingChange: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, Codable { case save, delete }
    public var zoneName: String
    public var recordName: String
    public var kind: Kind
    public var recordType: String
    /// The full local fields (for saves).
    public var fields: [String: FieldValue]
    /// Fields the device changed since the server copy.
    public var changedKeys: Set<String>
    /// For deletes: the server version the user deleted (nil if it never reached the server).
    public var baseChangeTag: String?
    /// Bumped on every local change, so a send only clears the entry it actually sent.
    public var revision: Int64
    /// For saves: the record's parent (see ``LocalRecord/parent``).
    public var parent: String? = nil
}

/// An entry of the conflict log: a record both sides changed, and how it was resolved.
public struct ConflictRecord: Sendable, Hashable, Codable {
    public var zoneName: String
    public var recordName: String
    /// Milliseconds since the epoch.
    public var resolvedAt: Int64
    public var resolutions: [FieldResolution]
}

extension Dictionary where Key == String, Value == FieldValue {
    /// The fields as canonical JSON text.
    var jsonText: String { Record.fieldsJSONText(self) }

    init(jsonText: String) throws {
        self = try Record.fields(fromWire: try JSON.parse(jsonText))
    }
}
