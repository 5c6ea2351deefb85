import Foundation
import NimbusProtocol

#if canImport(CoreLocation)
import CoreLocation
#endif

extension CLLocation {
    /// The location as the SDK stores it (unknown accuracies, course and speed left out).
    var nimbus: Location {
        Location(
            latitude: coordinate.latitude, longitude: coordinate.longitude,
            horizontalAccuracy: horizontalAccuracy >= 0 ? horizontalAccuracy : nil,
            verticalAccuracy: verticalAccuracy >= 0 ? verticalAccuracy : nil, altitude: altitude,
            speed: speed >= 0 ? speed : nil, course: course >= 0 ? course : nil,
            timestamp: Int64((timestamp.timeIntervalSince1970 * 1000).rounded()))
    }

    /// A location the SDK read.
    static func from(_ location: Location) -> CLLocation {
        CLLocation(
            coordinate: CLLocationCoordinate2D(latitude: location.latitude, longitude: location.longitude),
            altitude: location.altitude ?? 0, horizontalAccuracy: location.horizontalAccuracy ?? 0,
            verticalAccuracy: location.verticalAccuracy ?? -1, course: location.course ?? -1,
            speed: location.speed ?? -1,
            timestamp: location.timestamp.map { Date(timeIntervalSince1970: Double($0) / 1000) } ?? Date(timeIntervalSince1970: 0))
    }
}
