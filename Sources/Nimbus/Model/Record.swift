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
    /// Every member, behind one reference: copying a record (into an operation, a decision,
    /// an event) retains one object, and the first change to a shared copy copies the members
    /// (``Storage``).
    private var storage: Storage

    /// The record's identity: its name within a zone.
    public var id: ID { storage.members.id }
    /// The record type (`"Bookmark"`), which the server's schema rules are keyed on.
    public var recordType: String { storage.members.recordType }
    /// The server's version tag; `nil` for a record that has never been saved.
    public internal(set) var recordChangeTag: String? {
        get { storage.members.recordChangeTag }
        _modify { yield &members.recordChangeTag }
    }
    /// When the record was created on the server.
    public internal(set) var creationDate: Date? {
        get { storage.members.creationDate }
        _modify { yield &members.creationDate }
    }
    /// The user record name of the record's creator.
    public internal(set) var creatorUserRecordName: String? {
        get { storage.members.creatorUserRecordName }
        _modify { yield &members.creatorUserRecordName }
    }
    /// When the record last changed on the server.
    public internal(set) var modificationDate: Date? {
        get { storage.members.modificationDate }
        _modify { yield &members.modificationDate }
    }
    /// The user record name of whoever changed the record last.
    public internal(set) var lastModifiedUserRecordName: String? {
        get { storage.members.lastModifiedUserRecordName }
        _modify { yield &members.lastModifiedUserRecordName }
    }
    /// The device that made the last change (as sent in `X-Nimbus-Device-ID`).
    public internal(set) var lastModifiedDeviceID: String? {
        get { storage.members.lastModifiedDeviceID }
        _modify { yield &members.lastModifiedDeviceID }
    }

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
        get { storage.members.parent }
        set {
            if newValue != storage.members.parent { members.parentChanged = true }
            members.parent = newValue
        }
    }
    /// The share this record is the root of (CloudKit's `CKRecord.share`), kept by the server:
    /// set when a ``Share`` is saved with this record as its root
    /// (``Database/save(_:rootRecord:)``), cleared when the share is deleted.
    public package(set) var share: Reference? {
        get { storage.members.share }
        _modify { yield &members.share }
    }
    /// Whether ``parent`` was set since the last fetch or save (a save then sends it, `null`
    /// included).
    var parentChanged: Bool {
        get { storage.members.parentChanged }
        _modify { yield &members.parentChanged }
    }
    /// The members only a share record has (participants, permission, short GUID); `nil`
    /// on other records. Read through ``Share``.
    var shareState: Share.State? {
        get { storage.members.shareState }
        _modify { yield &members.shareState }
    }

    /// The fields that are encrypted end to end (``encryptedValues``): sealed before a save
    /// sends them, opened when a fetch brings them. Their values in ``fieldValue(forKey:)`` are
    /// the opened ones.
    public package(set) var encryptedKeys: Set<String> {
        get { storage.members.encryptedKeys }
        _modify { yield &members.encryptedKeys }
    }

    /// Current field values (`package`: the sync engine stores them without copying key by key).
    package internal(set) var values: [String: FieldValue] {
        get { storage.members.values }
        _modify { yield &members.values }
    }
    /// For each key changed since the last fetch or save: its value then (`nil`: absent).
    var originalValues: [String: FieldValue?] {
        get { storage.members.originalValues }
        _modify { yield &members.originalValues }
    }

    /// A new record that does not exist on the server yet.
    public init(recordType: String, recordID: ID = ID()) {
        storage = Storage(Members(id: recordID, recordType: recordType))
    }

    /// A fetched record: its system fields and values set at once (one storage made, rather
    /// than a change for each).
    init(
        id: ID, recordType: String, recordChangeTag: String?, creationDate: Date?, creatorUserRecordName: String?,
        modificationDate: Date?, lastModifiedUserRecordName: String?, lastModifiedDeviceID: String?,
        values: [String: FieldValue]
    ) {
        storage = Storage(
            Members(
                id: id, recordType: recordType, recordChangeTag: recordChangeTag, creationDate: creationDate,
                creatorUserRecordName: creatorUserRecordName, modificationDate: modificationDate,
                lastModifiedUserRecordName: lastModifiedUserRecordName, lastModifiedDeviceID: lastModifiedDeviceID,
                values: values))
    }

    public static func == (lhs: Record, rhs: Record) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.members == rhs.storage.members
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage.members)
    }

    /// The members, for a change: a storage another record shares is copied first, so the
    /// change is this record's alone.
    private var members: Members {
        get { storage.members }
        _modify {
            if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.members) }
            yield &storage.members
        }
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

extension Record {
    /// A record's members (what a record equals and hashes by).
    private struct Members: Sendable, Hashable {
        let id: ID
        let recordType: String
        var recordChangeTag: String? = nil
        var creationDate: Date? = nil
        var creatorUserRecordName: String? = nil
        var modificationDate: Date? = nil
        var lastModifiedUserRecordName: String? = nil
        var lastModifiedDeviceID: String? = nil
        var parent: Reference? = nil
        var share: Reference? = nil
        var parentChanged = false
        var shareState: Share.State? = nil
        var encryptedKeys: Set<String> = []
        var values: [String: FieldValue] = [:]
        var originalValues: [String: FieldValue?] = [:]
    }

    /// The one reference a record's copies share until one of them changes.
    ///
    /// `@unchecked Sendable`, and sound: `members` is changed only through `Record.members`'s
    /// `_modify`, which first makes this storage referenced by the one record being changed
    /// alone (copying it when `isKnownUniquelyReferenced` is false). A storage that two
    /// records, and so possibly two threads, hold is never written, only read; a record
    /// changed on one thread is that thread's value (`Record` is a value type, and a
    /// `mutating` access is exclusive). `Members` is itself `Sendable`.
    private final class Storage: @unchecked Sendable {
        var members: Members

        init(_ members: Members) {
            self.members = members
        }
    }
}
