// The shared value model (FieldValue, ZoneID, Reference, Location, …) is part of this
// module's API: an app imports `Nimbus` alone. `Nimbus.Record` shadows the wire-level
// `NimbusProtocol.Record` for code that imports `Nimbus`.
@_exported import NimbusProtocol
