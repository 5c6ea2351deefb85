// CloudKit re-exports Foundation (and CoreLocation on Apple platforms), so code that imports
// only CloudKit uses `URL`, `Date` and `CLLocation` without importing them: the same holds
// for code that imports NimbusCloudKit in its place.
@_exported import Foundation

#if canImport(CoreLocation)
@_exported import CoreLocation
#endif

// `NimbusConnection.environment`'s type: development or production.
@_exported import enum NimbusProtocol.ContainerEnvironment
