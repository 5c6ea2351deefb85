/// Exact conversions between a `Date`'s `timeIntervalSinceReferenceDate` (a `Double` of
/// seconds since 2001-01-01T00:00:00Z) and a TIMESTAMP's parts (whole milliseconds since
/// 1970 and a fraction of a millisecond in units of 2^-54 ms), in integer arithmetic only.
///
/// A finite `Double` is `significand × 2^exponent` exactly, so its milliseconds,
/// `1000 × significand × 2^exponent`, are a whole number plus a binary fraction. With a
/// fraction of 54 bits every interval at least 2^-2 s away from the reference date (every
/// `Date` but those within a quarter of a second of 2001-01-01T00:00:00Z) converts without
/// loss and back to the same bits; closer ones keep the nearest 2^-54 ms (5.6 × 10^-20 s).
/// 2^53, the largest fraction, is an integer JavaScript still reads exactly, and
/// `fraction × 2^-54` a `Double` that prints and parses back exactly. The `Double` nearest to
/// a whole millisecond converts to that millisecond without fraction.
enum TimestampArithmetic {
    /// Fraction units in a millisecond.
    static let unit: Int64 = 1 << 54
    static let half: Int64 = 1 << 53
    /// 2001-01-01T00:00:00Z in milliseconds since 1970-01-01T00:00:00Z.
    static let referenceMilliseconds: Int64 = 978_307_200_000

    /// The parts of an interval since the reference date: the nearest whole millisecond
    /// since 1970 (half a millisecond rounds up) and the fraction within [-2^53, 2^53).
    /// Intervals beyond ±2^63 ms clamp to the range; NaN is the reference date.
    static func timestamp(ofReferenceInterval seconds: Double) -> (milliseconds: Int64, fraction: Int64) {
        let limit: (milliseconds: Int64, fraction: Int64) = seconds < 0 ? (Int64.min, 0) : (Int64.max, 0)
        guard !seconds.isNaN else { return (referenceMilliseconds, 0) }
        guard seconds.isFinite else { return limit }
        let magnitude = seconds.magnitude
        let biased = Int(magnitude.exponentBitPattern)
        let significand = magnitude.significandBitPattern | (biased == 0 ? 0 : 1 << 52)
        // magnitude == significand × 2^exponent; significand < 2^53, so its milliseconds
        // (× 1000 < 2^10) stay below 2^63.
        let exponent = (biased == 0 ? 1 : biased) - 1075
        let product = significand * 1000
        var whole: UInt64
        var part: UInt64  // units of 2^-54 ms, at most 2^54 after rounding
        if exponent >= 0 {
            guard exponent < 64, product.leadingZeroBitCount > exponent else { return limit }
            whole = product << UInt64(exponent)
            part = 0
        } else {
            let shift = UInt64(-exponent)
            whole = product >> shift  // 0 for shifts of 64 and more
            let rest = product &- (shift >= 64 ? 0 : whole << shift)  // < 2^shift
            if shift <= 54 {
                part = rest << (54 - shift)
            } else {
                // Finer than the fraction keeps (within 2^-2 s of the reference date): the
                // nearest unit, half up.
                let drop = shift - 54
                part = (rest >> drop) &+ ((rest >> (drop - 1)) & 1)
            }
        }
        guard whole <= UInt64(Int64.max) else { return limit }
        var milliseconds = Int64(whole)
        var fraction = Int64(part)
        if seconds < 0 {
            milliseconds = -milliseconds
            fraction = -fraction
        }
        guard let normalized = normalized(milliseconds: milliseconds, fraction: fraction),
            case (let since1970, false) = normalized.milliseconds.addingReportingOverflow(referenceMilliseconds)
        else { return limit }
        // The Double a whole millisecond reads as (a date from a TIMESTAMP without fraction,
        // as servers and older clients write them) keeps no fraction: the whole milliseconds
        // alone give it back, and it goes back to the server as it came.
        if normalized.fraction != 0,
            referenceInterval(milliseconds: since1970, fraction: 0).bitPattern == seconds.bitPattern
        {
            return (since1970, 0)
        }
        return (since1970, normalized.fraction)
    }

    /// `milliseconds` and `fraction` (any value within ±2^62) as the same time with the
    /// fraction within [-2^53, 2^53); `nil` when the milliseconds leave the 64-bit range.
    static func normalized(milliseconds: Int64, fraction: Int64) -> (milliseconds: Int64, fraction: Int64)? {
        // Whole milliseconds in the fraction, rounded so the rest lies in [-2^53, 2^53).
        let carry = (fraction &+ half) >> 54  // floor division (arithmetic shift)
        let rest = fraction &- (carry << 54)
        let (sum, overflow) = milliseconds.addingReportingOverflow(carry)
        return overflow ? nil : (sum, rest)
    }

    /// The interval since the reference date of a TIMESTAMP's parts: exact for parts
    /// ``timestamp(ofReferenceInterval:)`` made, else the nearest `Double` (ties to even).
    static func referenceInterval(milliseconds: Int64, fraction: Int64) -> Double {
        let (relative, overflow) = milliseconds.subtractingReportingOverflow(referenceMilliseconds)
        // Beyond 2^63 ms from 2001 a Double has no sub-second digits left to lose.
        guard !overflow else { return Double(milliseconds) / 1000 - Double(referenceMilliseconds) / 1000 }
        // u = relative × 2^54 + fraction (|u| < 2^118), as 128-bit two's complement.
        var high = UInt64(bitPattern: relative >> 10)
        var low = UInt64(bitPattern: relative) << 54
        let (sum, carry) = low.addingReportingOverflow(UInt64(bitPattern: fraction))
        low = sum
        high = high &+ (fraction < 0 ? UInt64.max : 0) &+ (carry ? 1 : 0)
        let negative = Int64(bitPattern: high) < 0
        if negative {
            low = ~low &+ 1
            high = ~high &+ (low == 0 ? 1 : 0)
        }
        guard high != 0 || low != 0 else { return 0 }
        // The seconds are u / (1000 × 2^54) = u / (125 × 2^57). Shift u up to its top bit
        // (bit 127) so the quotient by 125 keeps 121 bits or more, then round those to 53.
        let lead = high != 0 ? high.leadingZeroBitCount : 64 + low.leadingZeroBitCount
        if lead >= 64 {
            high = low << UInt64(lead - 64)
            low = 0
        } else if lead > 0 {
            high = high << UInt64(lead) | low >> UInt64(64 - lead)
            low = low << UInt64(lead)
        }
        let quotientHigh = high / 125
        let (quotientLow, remainder) = UInt64(125).dividingFullWidth((high: high % 125, low: low))
        // quotientHigh ≥ 2^127 / 125 / 2^64 > 2^56: the 53 top bits of the quotient are in it.
        let dropped = 128 - quotientHigh.leadingZeroBitCount - 53  // 68 or 69
        var significand = quotientHigh >> UInt64(dropped - 64)
        let halfBit = (quotientHigh >> UInt64(dropped - 65)) & 1
        let sticky = quotientHigh & ((1 << UInt64(dropped - 65)) - 1) != 0 || quotientLow != 0 || remainder != 0
        if halfBit == 1 && (sticky || significand & 1 == 1) { significand += 1 }
        return Double(
            sign: negative ? .minus : .plus, exponent: dropped - 57 - lead, significand: Double(significand))
    }
}
