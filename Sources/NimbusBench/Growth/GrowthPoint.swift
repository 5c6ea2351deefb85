import NimbusProtocol

/// What `nimbus-bench growth` measured at one size of one spread.
struct GrowthPoint: Sendable {
    var spread: GrowthSpread
    /// Live records in the database when the probes ran.
    var records: Int
    /// Records per second the store took while growing to this size (no HTTP).
    var buildRate: Double
    /// Batched creates over HTTP, 200 per `records/modify`, one client (records per second).
    var writeRate: Double
    var modifyP50: Double
    var modifyP99: Double
    /// One `records/changes` page of 200 (ms, median of the first ten pages of the probe zone).
    var feedPage: Double
    /// First page (200) of an EQUALS query on an indexed field (ms, median).
    var queryEquals: Double
    /// First page (200) of a range query sorted by the indexed field (ms, median).
    var queryRange: Double
    /// One compaction pass removing `tombstones` tombstones (ms).
    var compaction: Double
    var tombstones: Int
    /// The database's bytes on disk per live record.
    var bytesPerRecord: Double
    /// The bench process's resident memory (the embedded server with the bench's client), MB.
    var residentMB: Double

    var json: JSON {
        .object([
            "spread": .string(spread.rawValue), "records": .int(records), "buildRecordsPerSecond": .double(buildRate),
            "batchedWriteRecordsPerSecond": .double(writeRate), "modifyP50Millis": .double(modifyP50),
            "modifyP99Millis": .double(modifyP99), "changesPageMillis": .double(feedPage),
            "queryEqualsMillis": .double(queryEquals), "querySortedRangeMillis": .double(queryRange),
            "compactionMillis": .double(compaction), "tombstonesRemoved": .int(tombstones),
            "bytesPerRecord": .double(bytesPerRecord), "residentMB": .double(residentMB),
        ])
    }
}

/// One curve of the growth bench: how a point's cost is read, and how it is shown.
struct GrowthMetric: Sendable {
    var title: String
    var unit: String
    var decimals: Int
    /// The value as measured.
    var value: @Sendable (GrowthPoint) -> Double
    /// True when more is better (a rate): the cost is then its inverse.
    var higherIsBetter = false

    /// The cost at `point` relative to the cost at `first` (1: the same; 2: twice as costly).
    func costRatio(_ point: GrowthPoint, to first: GrowthPoint) -> Double {
        let (now, then) = (value(point), value(first))
        guard now > 0, then > 0 else { return .nan }
        return higherIsBetter ? then / now : now / then
    }

    static let all: [GrowthMetric] = [
        GrowthMetric(title: "Batched writes", unit: "rec/s", decimals: 0, value: \.writeRate, higherIsBetter: true),
        GrowthMetric(title: "Modify p50", unit: "ms", decimals: 2, value: \.modifyP50),
        GrowthMetric(title: "Modify p99", unit: "ms", decimals: 2, value: \.modifyP99),
        GrowthMetric(title: "Changes page", unit: "ms", decimals: 2, value: \.feedPage),
        GrowthMetric(title: "Query equals", unit: "ms", decimals: 2, value: \.queryEquals),
        GrowthMetric(title: "Query sorted range", unit: "ms", decimals: 2, value: \.queryRange),
        GrowthMetric(title: "Compaction per tombstone", unit: "µs", decimals: 1, value: { $0.tombstones > 0 ? $0.compaction * 1000 / Double($0.tombstones) : 0 }),
        GrowthMetric(title: "Size per record", unit: "B", decimals: 0, value: \.bytesPerRecord),
        GrowthMetric(title: "Resident memory", unit: "MB", decimals: 0, value: \.residentMB),
    ]
}
