import Foundation
import NimbusProtocol
import Testing

/// A `Date` in a TIMESTAMP: whole milliseconds in `value`, as CloudKit Web Services carries
/// them, and the fraction of a millisecond beside them (`millisecondFraction`), so that the
/// date comes back with the same bits.
@Suite("TIMESTAMP fractions of a millisecond")
struct TimestampFractionTests {
    /// Seeded dates: now and near it (what `Date()` gives), anywhere within ±100 years of
    /// 2001, and random bit patterns from a quarter of a second to 10^12 seconds away.
    static func dates(count: Int, seed: UInt64) -> [Date] {
        var random = SplitMix64(seed: seed)
        var dates: [Date] = [Date(), Date.distantPast, Date.distantFuture, Date(timeIntervalSince1970: 0)]
        for index in 0..<count {
            let seconds: Double
            switch index % 3 {
            case 0: seconds = Date().timeIntervalSinceReferenceDate + Double.random(in: -1e6...1e6, using: &random)
            case 1: seconds = Double.random(in: -3.2e9...3.2e9, using: &random)
            default:
                let significand = 1 + Double(random.next() >> 12) * 0x1p-52
                let exponent = random.int(-2...39)
                seconds = Double(sign: random.chance(0.5) ? .minus : .plus, exponent: exponent, significand: significand)
            }
            dates.append(Date(timeIntervalSinceReferenceDate: seconds))
        }
        return dates
    }

    static func decode(_ text: String) throws -> FieldValue {
        try FieldValue(wire: WireReader(try JSON.parse(Array(text.utf8))))
    }

    @Test func everyDateComesBackWithTheSameBitsThroughTheWire() throws {
        for date in Self.dates(count: 30_000, seed: 37) {
            let value = FieldValue(date: date)
            guard case .timestamp(let milliseconds, let fraction) = value else {
                Issue.record("not a TIMESTAMP: \(value)")
                continue
            }
            // `value` is the nearest whole millisecond; the fraction lies within half of one.
            #expect(fraction >= -(1 << 53) && fraction < 1 << 53)
            let exact = (date.timeIntervalSinceReferenceDate + 978_307_200) * 1000
            if abs(exact) < 1e14 { #expect(abs(Double(milliseconds) - exact) <= 0.5 + 0.02, "\(date)") }
            // The field dictionary as the server stores and sends it, and back.
            var bytes: [UInt8] = []
            value.writeWire(into: &bytes)
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text == value.wireJSON().serialized())
            let decoded = try Self.decode(text)
            #expect(decoded == value, "\(text)")
            let back = try #require(decoded.dateValue)
            #expect(
                back.timeIntervalSinceReferenceDate.bitPattern == date.timeIntervalSinceReferenceDate.bitPattern,
                "\(date.timeIntervalSinceReferenceDate) came back as \(back.timeIntervalSinceReferenceDate) via \(text)")
        }
    }

    @Test func listsCarryOneFractionPerMember() throws {
        let dates = Self.dates(count: 50, seed: 7)
        let list = FieldValue.list(elementType: .timestamp, dates.map(FieldValue.init(date:)) + [.timestamp(5)])
        let text = list.wireJSON().serialized()
        let json = try JSON.parse(Array(text.utf8))
        #expect(json["millisecondFraction"]?.array?.count == dates.count + 1)
        #expect(json["millisecondFraction"]?.array?.last == .int(0))
        #expect(json["value"]?.array?.allSatisfy { $0.int64 != nil } == true, "value holds integers only")
        let decoded = try Self.decode(text)
        #expect(decoded == list)
        #expect(decoded.listValue?.compactMap(\.dateValue).dropLast() == dates[...])
        // Whole milliseconds only: the field dictionary CloudKit Web Services knows.
        let whole = FieldValue.list(elementType: .timestamp, [.timestamp(1), .timestamp(2)])
        #expect(whole.wireJSON().serialized() == #"{"type":"TIMESTAMP_LIST","value":[1,2]}"#)
    }

    @Test func whatOlderClientsAndServersWriteStillReads() throws {
        // No fraction: whole milliseconds, as before; and a date read from them goes back as it came.
        let old = try Self.decode(#"{"type":"TIMESTAMP","value":1700000000123}"#)
        #expect(old == .timestamp(1_700_000_000_123))
        let date = try #require(old.dateValue)
        #expect(abs(date.timeIntervalSince1970 - 1_700_000_000.123) < 1e-6)
        #expect(FieldValue(date: date) == old)
        #expect(FieldValue(date: FieldValue.date(milliseconds: -5)) == .timestamp(-5))
        // A whole date keeps no fraction on the wire.
        #expect(
            FieldValue(date: Date(timeIntervalSince1970: 1_700_000_000.25)).wireJSON().serialized()
                == #"{"type":"TIMESTAMP","value":1700000000250}"#)
    }

    @Test func aFractionSentIsWrittenWithTheNearestMillisecond() throws {
        let quarter = FieldValue.timestampFractionsPerMillisecond / 4
        #expect(try Self.decode(#"{"type":"TIMESTAMP","value":10,"millisecondFraction":0.75}"#) == .timestamp(11, fraction: -quarter))
        #expect(try Self.decode(#"{"type":"TIMESTAMP","value":10,"millisecondFraction":-0.5}"#) == .timestamp(10, fraction: -2 * quarter))
        #expect(try Self.decode(#"{"type":"TIMESTAMP","value":10,"millisecondFraction":0.5}"#) == .timestamp(11, fraction: -2 * quarter))
        #expect(try Self.decode(#"{"type":"TIMESTAMP","value":10,"millisecondFraction":0}"#) == .timestamp(10))
        #expect(FieldValue.timestamp(milliseconds: Int64.max, fraction: 3 * quarter) == nil)
    }

    @Test func aFractionThatDoesNotFitIsRefusedWithItsReason() {
        let refused: [(String, String)] = [
            (#"{"type":"TIMESTAMP","value":10,"millisecondFraction":1}"#, "less than 1"),
            (#"{"type":"TIMESTAMP","value":10,"millisecondFraction":-1.5}"#, "greater than -1"),
            (#"{"type":"TIMESTAMP","value":10,"millisecondFraction":"half"}"#, "millisecondFraction"),
            (#"{"type":"TIMESTAMP_LIST","value":[1,2],"millisecondFraction":[0.1]}"#, "one fraction per member"),
            (#"{"type":"TIMESTAMP_LIST","value":[1],"millisecondFraction":0.1}"#, "millisecondFraction"),
            (#"{"type":"INT64","value":10,"millisecondFraction":0.1}"#, "INT64"),
            (#"{"value":10,"millisecondFraction":0.1}"#, "needs \"type\""),
        ]
        for (text, fragment) in refused {
            let error = #expect(throws: CloudKitError.self, "\(text)") { try Self.decode(text) }
            #expect(error?.code == .badRequest, "\(text)")
            #expect(error?.reason.contains(fragment) == true, "\(text): \(error?.reason ?? "")")
        }
    }

    /// Hostile parts never trap: any 64-bit milliseconds with any fraction a server could
    /// send (the wire's (-1, 1) ms and beyond it), read as a date, and any `Double` bit
    /// pattern (NaN, infinities, subnormals, ±10^308 s) made into a TIMESTAMP and read back.
    @Test func extremeTimestampsAndDatesNeverTrap() throws {
        var random = SplitMix64(seed: 29)
        let edges: [Int64] = [.min, .min + 1, -978_307_200_000, -1, 0, 1, 978_307_200_000, .max - 1, .max]
        for index in 0..<20_000 {
            let fractions: [Int64] = [Int64.min >> 1, -(1 << 53), 0, (1 << 53) - 1, Int64.max >> 1]
            let milliseconds: Int64
            let fraction: Int64
            if index < edges.count * fractions.count {
                milliseconds = edges[index % edges.count]
                fraction = fractions[index / edges.count]
            } else {
                milliseconds = Int64(bitPattern: random.next())
                let shift: Int = random.int(1...63)
                fraction = Int64(bitPattern: random.next()) >> Int64(shift)
            }
            if let value = FieldValue.timestamp(milliseconds: milliseconds, fraction: fraction) {
                _ = value.dateValue
                _ = value.wireJSON().serialized()
            }
            _ = FieldValue.date(milliseconds: milliseconds, fraction: fraction)
            let text = #"{"type":"TIMESTAMP","value":\#(milliseconds),"millisecondFraction":\#(Double(fraction) * 0x1p-54)}"#
            if let decoded = try? Self.decode(text) { _ = decoded.dateValue }
            let date = Date(timeIntervalSinceReferenceDate: Double(bitPattern: random.next()))
            let stored = FieldValue(date: date)
            _ = stored.dateValue
            _ = stored.wireJSON().serialized()
        }
    }

    @Test func timestampsOrderToTheFractionOfAMillisecond() {
        var random = SplitMix64(seed: 11)
        let base = Date().timeIntervalSinceReferenceDate
        for _ in 0..<5_000 {
            // Two dates within the same few milliseconds.
            let a = base + Double.random(in: 0..<0.003, using: &random)
            let b = random.chance(0.1) ? a : base + Double.random(in: 0..<0.003, using: &random)
            let order = QueryFilter.order(
                FieldValue(date: Date(timeIntervalSinceReferenceDate: a)),
                FieldValue(date: Date(timeIntervalSinceReferenceDate: b)))
            #expect(order == (a == b ? .orderedSame : a < b ? .orderedAscending : .orderedDescending), "\(a) \(b)")
        }
        // An INT64 of milliseconds compares as that whole millisecond.
        #expect(QueryFilter.order(.timestamp(10, fraction: 1), .int64(10)) == .orderedDescending)
        #expect(QueryFilter.order(.int64(10), .timestamp(10)) == .orderedSame)
    }
}
