import Foundation
import NimbusProtocol

/// A record: a typed dictionary of fields with an identity, a type and the system fields the
/// server maintains. The SDK's counterpart of `CKRecord`.
///
/// `Record` is a value type that tracks which keys changed since it was last fetched or saved
/// (``changedKeys``), so that a save can send only those keys and a conflict can be merged
/// three ways (``ancestorRecord``).
///
/// ```swift
/// var bookmark = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "a1", zoneID: zone))
/// bookmark["title"] = "Swift on the server"
/// bookmark["addedAt"] = Date()
/// bookmark["tags"] = ["swift", "server"]
/// let title: String? = bookmark["title"]
/// ```
public struct Record: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// The record's identity: its name within a zone.
    public let id: ID
    /// The record type (`"Bookmark"`), which the server's schema rules are keyed on.
    public let recordType: String
    /// The server's version tag; `nil` for a record that has never been saved.
    public internal(set) var recordChangeTag: String?
    /// When the record was created on the server.
    public internal(set) var creationDate: Date?
    /// The user record name of the record's creator.
    public internal(set) var creatorUserRecordName: String?
    /// When the record last changed on the server.
    public internal(set) var modificationDate: Date?
    /// The user record name of whoever changed the record last.
    public internal(set) var lastModifiedUserRecordName: String?
    /// The device that made the last change (as sent in `X-Nimbus-Device-ID`).
    public internal(set) var lastModifiedDeviceID: String?

    /// The record this one belongs under (CloudKit's `CKRecord.parent`): a record of the same
    /// zone. A share of a record hierarchy covers its root and every record whose `parent`
    /// chain reaches the root; no other reference field counts.
    ///
    /// ```swift
    /// var photo = Record(recordType: "Photo", recordID: Record.ID(zoneID: albums))
    /// photo.parent = Reference(recordID: album.id)   // shared with the album
    /// ```
    ///
    /// Setting `nil` removes the parent on the next save.
    public var parent: Reference? {
        didSet { if parent != oldValue { parentChanged = true } }
    }
    /// The share this record is the root of (CloudKit's `CKRecord.share`), kept by the server:
    /// set when a ``Share`` is saved with this record as its root
    /// (``Database/save(_:rootRecord:)``), cleared when the share is deleted.
    public package(set) var share: Reference?
    /// Whether ``parent`` was set since the last fetch or save (a save then sends it, `null`
    /// included).
    var parentChanged = false
    /// The members only a share record has (participants, permission, short GUID); `nil`
    /// on other records. Read through ``Share``.
    var shareState: Share.State?

    /// The fields that are encrypted end to end (``encryptedValues``): sealed before a save
    /// sends them, opened when a fetch brings them. Their values in ``fieldValue(forKey:)`` are
    /// the opened ones.
    public package(set) var encryptedKeys: Set<String> = []

    /// Current field values (`package`: the sync engine stores them without copying key by key).
    package internal(set) var values: [String: FieldValue]
    /// For each key changed since the last fetch or save: its value then (`nil`: absent).
    var originalValues: [String: FieldValue?]

    /// A new record that does not exist on the server yet.
    public init(recordType: String, recordID: ID = ID()) {
        self.id = recordID
        self.recordType = recordType
        self.values = [:]
        self.originalValues = [:]
    }

    /// The record's identity (CloudKit's name for ``id``).
    public var recordID: ID { id }

    /// The keys that have a value.
    public var allKeys: [String] { values.keys.sorted() }

    /// The keys whose values differ from the server copy this record was fetched or saved as,
    /// including keys that were removed. Empty after a fetch or a successful save.
    public var changedKeys: [String] { originalValues.keys.sorted() }

    /// Whether the server has a copy of this record (it has a change tag).
    public var isSaved: Bool { recordChangeTag != nil }

    /// A field's value, converted to `Value`; `nil` when absent or of another type.
    /// Setting `nil` removes the field.
    public subscript<Value: RecordValue>(key: String) -> Value? {
        get { values[key].flatMap(Value.init(fieldValue:)) }
        set { setFieldValue(newValue?.fieldValue, forKey: key) }
    }

    /// A field's raw value.
    public func fieldValue(forKey key: String) -> FieldValue? { values[key] }

    /// Sets or (with `nil`) removes a field, tracking the change.
    public mutating func setFieldValue(_ value: FieldValue?, forKey key: String) {
        let current = values[key]
        guard current != value else { return }
        if let original = originalValues[key] {
            // Changed before: forget the change if the value went back to the original.
            if original == value { originalValues[key] = nil }
        } else {
            originalValues[key] = .some(current)
        }
        values[key] = value
    }

    /// The record as the server last had it (the values before the local changes), with the
    /// same system fields. `nil` for a record never saved. This is the ancestor of a
    /// three-way merge after ``NimbusError/Code/serverRecordChanged``.
    public var ancestorRecord: Record? {
        guard isSaved else { return nil }
        var ancestor = self
        for (key, original) in originalValues { ancestor.values[key] = original }
        ancestor.originalValues = [:]
        ancestor.parentChanged = false
        return ancestor
    }

    /// Forgets the local changes: ``changedKeys`` becomes empty and the current values count
    /// as the server's.
    public mutating func clearChangedKeys() {
        originalValues = [:]
        parentChanged = false
    }

    public var description: String {
        let fields = allKeys.map { "\($0)=\(values[$0]!)" }.joined(separator: ", ")
        let parentText = parent.map { ", parent: \($0.recordName)" } ?? ""
        return "Record(\(recordType) \(id), tag: \(recordChangeTag ?? "-")\(parentText), \(fields))"
    }
}

extension Record {
    /// Identifies a record: its name and zone. The SDK's counterpart of `CKRecord.ID`.
    public struct ID: Sendable, Hashable, Codable, CustomStringConvertible {
        public var recordName: String
        public var zoneID: ZoneID

        /// - Parameters:
        ///   - recordName: defaults to a new UUID string.
        ///   - zoneID: defaults to the default zone.
        public init(recordName: String = UUID().uuidString, zoneID: ZoneID = .default) {
            self.recordName = recordName
            self.zoneID = zoneID
        }

        public var description: String { "\(zoneID.zoneName)/\(recordName)" }
    }
}
