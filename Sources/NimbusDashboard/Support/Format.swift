import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// How pages write times and numbers.
enum Format {
    /// `2026-11-24 01:02:03 UTC` from milliseconds since the epoch.
    static func date(_ millis: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss 'UTC'"
        return formatter.string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
    }

    /// `12.3` with one decimal.
    static func decimal(_ value: Double) -> String {
        String(format: "%.1f", value)
    }
}
