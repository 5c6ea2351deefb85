import Foundation

/// The name of a conflict version kept beside the document it lost to:
/// `"Plan (Conflict from Alice's iPad, 2026-11-27 23.15.04).txt"` (the time in UTC, with periods,
/// since Windows allows no colons).
public enum ConflictName {
    /// The name of the version of `name` written by `device` at `date`.
    public static func name(for name: String, device: String, date: Date) -> String {
        NameParts.adding(" (Conflict from \(device), \(stamp(date)))", to: name)
    }

    /// `date` as `yyyy-MM-dd HH.mm.ss` in UTC.
    static func stamp(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        return String(format: "%04d", parts.year ?? 0) + "-" + two(parts.month) + "-" + two(parts.day) + " "
            + two(parts.hour) + "." + two(parts.minute) + "." + two(parts.second)
    }
}
