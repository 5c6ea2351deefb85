/// A REFERENCE field value: a link from one record to another in the same zone.
public struct Reference: Sendable, Hashable, Codable {
    /// What the server does with the reference.
    public enum Action: String, Sendable, Hashable, Codable, CaseIterable {
        /// A plain link.
        case none = "NONE"
        /// Deleting the target deletes the record holding this reference.
        case deleteSelf = "DELETE_SELF"
        /// The target must exist when the record is saved (VALIDATING_REFERENCE_ERROR otherwise).
        case validate = "VALIDATE"
    }

    public var recordName: String
    public var zoneID: ZoneID?
    public var action: Action

    public init(recordName: String, zoneID: ZoneID? = nil, action: Action = .none) {
        self.recordName = recordName
        self.zoneID = zoneID
        self.action = action
    }
}
