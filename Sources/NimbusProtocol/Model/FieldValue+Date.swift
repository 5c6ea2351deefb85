import Foundation

extension FieldValue {
    /// The units of a TIMESTAMP's `fraction` in a millisecond: 2^54.
    public static let timestampFractionsPerMillisecond: Int64 = TimestampArithmetic.unit

    /// The TIMESTAMP of `date`, exactly: ``dateValue`` gives back a `Date` whose
    /// `timeIntervalSinceReferenceDate` has the same bits (for every date more than a quarter
    /// of a second from 2001-01-01T00:00:00Z; closer ones keep 2^-54 ms). Its whole
    /// milliseconds are the nearest to the date, as CloudKit Web Services carries them; the
    /// date a whole millisecond reads as (``date(milliseconds:fraction:)`` without fraction)
    /// has no fraction.
    public init(date: Date) {
        let parts = TimestampArithmetic.timestamp(ofReferenceInterval: date.timeIntervalSinceReferenceDate)
        self = .timestamp(parts.milliseconds, fraction: parts.fraction)
    }

    /// The date of a TIMESTAMP value, with its fraction of a millisecond; `nil` for other values.
    public var dateValue: Date? {
        guard case .timestamp(let milliseconds, let fraction) = self else { return nil }
        return FieldValue.date(milliseconds: milliseconds, fraction: fraction)
    }

    /// The date of a TIMESTAMP's parts: `milliseconds` since 1970 and a `fraction` of a
    /// millisecond in units of 2^-54 ms.
    public static func date(milliseconds: Int64, fraction: Int64 = 0) -> Date {
        Date(
            timeIntervalSinceReferenceDate: TimestampArithmetic.referenceInterval(
                milliseconds: milliseconds, fraction: fraction))
    }

    /// A TIMESTAMP of `milliseconds` and a `fraction` of a millisecond (in units of 2^-54 ms,
    /// within ±2^62) written with the nearest whole millisecond and the fraction within
    /// [-2^53, 2^53), the form every TIMESTAMP takes; `nil` beyond the 64-bit range.
    public static func timestamp(milliseconds: Int64, fraction: Int64) -> FieldValue? {
        TimestampArithmetic.normalized(milliseconds: milliseconds, fraction: fraction).map {
            .timestamp($0.milliseconds, fraction: $0.fraction)
        }
    }
}
