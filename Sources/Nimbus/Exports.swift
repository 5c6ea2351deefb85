// The value types of the shared model that the SDK's API uses are part of this module's API,
// so an app imports `Nimbus` alone. The rest of NimbusProtocol (its wire-level `Record`, the
// codec's readers) stays out of an app's namespace.
@_exported import enum NimbusProtocol.ContainerEnvironment
@_exported import enum NimbusProtocol.DatabaseScope
@_exported import enum NimbusProtocol.FieldType
@_exported import enum NimbusProtocol.FieldValue
@_exported import enum NimbusProtocol.JSON
@_exported import struct NimbusProtocol.Location
@_exported import struct NimbusProtocol.NotificationInfo
@_exported import struct NimbusProtocol.QueryFilter
@_exported import struct NimbusProtocol.QuerySort
@_exported import struct NimbusProtocol.RecordQuery
@_exported import struct NimbusProtocol.Reference
@_exported import enum NimbusProtocol.ServerErrorCode
@_exported import struct NimbusProtocol.ZoneID
// End-to-end encryption: the recovery key `EncryptionKeys.setUp(in:)` returns.
@_exported import struct NimbusCrypto.RecoveryKey
