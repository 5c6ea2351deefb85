import Nimbus

/// The SDK's record (NimbusProtocol has a wire-level `Record` too).
typealias Record = Nimbus.Record
