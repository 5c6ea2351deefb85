import NimbusProtocol
import NimbusStore

/// The system fields sharing adds to records, and where the server keeps them.
///
/// A record's `parent` and a root's `share` are kept as reserved REFERENCE fields of the
/// stored record, and a share's participants as a reserved STRING field of the share record
/// (``ShareState``): the stores keep them, version them and change them in the same
/// transaction as the rest of the record, with no change to either engine. Reserved names
/// contain a dot, which no client field name may (``NameRules/checkIdentifier(_:at:what:)``),
/// so they cannot collide. Responses lift them out of `fields` into the record dictionary's
/// own members (``APICall/liftingSystemFields(_:)``).
enum SystemFields {
    /// A record's `parent` (REFERENCE, action NONE).
    static let parent = StoredRecord.parentField
    /// A root record's `share` (REFERENCE to its share record, action NONE).
    static let share = "cloudkit.share"
    /// A share record's root (REFERENCE, action DELETE_SELF: deleting the root deletes the share).
    static let root = "cloudkit.root"
    /// A share record's ``ShareState`` (STRING, its stored text).
    static let shareState = "cloudkit.shareState"
    /// The record type of shares.
    static let shareType = "cloudkit.share"
    /// The record name of a zone-wide share (CloudKit's `CKRecordNameZoneWideShare`).
    static let zoneShareName = "cloudkit.zoneshare"
    /// The fields a client may set on a share record (CloudKit's `CKShare.SystemFieldKey`).
    static let shareFieldNames: Set<String> = ["cloudkit.title", "cloudkit.type", "cloudkit.thumbnailImageData"]
    /// Reserved fields never shown as fields.
    static let hidden: Set<String> = [parent, share, root, shareState]

    /// Whether a stored text may hold a reserved field or a share record (the bytes `"cloudkit.`):
    /// such records are written through the object form, which lifts them.
    static func mentioned(in text: String) -> Bool { FieldsText.contains(marker, in: text) }

    static func mentioned(in bytes: [UInt8]) -> Bool { FieldsText.contains(marker, in: bytes) }

    private static let marker = Array(#""cloudkit."#.utf8)
}

/// A change a request makes to an optional system field: left as it is, removed, or set.
enum SystemFieldChange<Value: Sendable & Equatable>: Sendable, Equatable {
    case unchanged
    case removed
    case set(Value)
}

/// The sharing parts of one record of a `records/modify` request, taken out of it before the
/// schema sees it.
struct RecordSharingParts: Sendable {
    var parent: SystemFieldChange<String> = .unchanged
    var share: SystemFieldChange<String> = .unchanged
    /// The record is a share (`cloudkit.share`).
    var isShare = false
    var publicPermission: ShareState.Permission?
    var invitations: [ShareInvitation]?
    /// The `cloudkit.*` fields of a share record (its title, type and thumbnail).
    var shareFields: [String: FieldValue] = [:]

    /// Reads `parent`, `share` and, on a share record, `publicPermission` and `participants`,
    /// and moves a share record's `cloudkit.*` fields out of `record`.
    init(reader: WireReader, record: inout Record) throws(CloudKitError) {
        parent = try Self.reference(reader, "parent")
        share = try Self.reference(reader, "share")
        isShare = record.recordType == SystemFields.shareType
        for name in record.fields.keys where name.hasPrefix("cloudkit.") {
            guard isShare, SystemFields.shareFieldNames.contains(name) else {
                throw .badRequest(
                    "'\(reader.path).fields.\(name)': field names starting with 'cloudkit.' are reserved"
                        + (isShare ? "; a share record may set cloudkit.title, cloudkit.type and cloudkit.thumbnailImageData" : ""))
            }
            shareFields[name] = record.fields.removeValue(forKey: name)
        }
        if isShare {
            publicPermission = try reader.optional("publicPermission").map { r throws(CloudKitError) in
                try ShareState.Permission(wire: r)
            }
            if let list = try reader.optional("participants") {
                let readers = try list.array()
                guard readers.count <= 100 else {
                    throw CloudKitError(.limitExceeded, "'\(list.path)' names \(readers.count) participants; a share has at most 100")
                }
                var invitations: [ShareInvitation] = []
                for participant in readers {
                    let invitation = try ShareInvitation(wire: participant)
                    // An owner participant in the list (CloudKit clients send the whole list back) is the owner.
                    if try participant.optionalString("type") == ShareState.Kind.owner.rawValue { continue }
                    invitations.append(invitation)
                }
                self.invitations = invitations
            }
        } else {
            let participants = try reader.optional("participants")
            let permission = try reader.optional("publicPermission")
            guard participants == nil, permission == nil else { throw .badRequest("'\(reader.path)': participants and publicPermission belong to share records (recordType cloudkit.share)") }
        }
    }

    private static func reference(_ reader: WireReader, _ key: String) throws(CloudKitError) -> SystemFieldChange<String> {
        if case .null? = try reader.object()[key] { return .removed }
        guard let member = try reader.optional(key) else { return .unchanged }
        let name = try member.required("recordName").string()
        try NameRules.checkName(name, at: "\(member.path).recordName")
        return .set(name)
    }
}
