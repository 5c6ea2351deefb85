import Foundation

/// The growth bench's text: a row per size and spread, then each curve's largest cost
/// relative to its first size, against the 1.5× bound.
enum GrowthTable {
    static let bound = 1.5

    static func text(_ points: [GrowthPoint], engine: String, machine: MachineInfo) -> String {
        var lines = [
            "nimbus-bench growth — \(engine) — \(machine.summary); load average at the end: \(machine.loadAverage)",
            header,
        ]
        lines += points.map(line)
        lines.append("")
        lines.append("largest cost relative to the first size (bound \(bound)×):")
        for spread in GrowthSpread.allCases {
            let curve = points.filter { $0.spread == spread }
            guard let first = curve.first, curve.count > 1 else { continue }
            let ratios = GrowthMetric.all.map { metric in
                (metric.title, curve.dropFirst().map { metric.costRatio($0, to: first) }.max() ?? .nan)
            }
            let worst = ratios.map(\.1).filter { !$0.isNaN }.max() ?? .nan
            lines.append(
                "  \(spread.title) (\(GrowthBenchCommand.label(first.records)) → \(GrowthBenchCommand.label(curve.last!.records))): "
                    + ratios.map { "\($0.0) \(String(format: "%.2f", $0.1))×" }.joined(separator: ", ")
                    + (worst <= bound ? " — flat: met" : " — MISSED"))
        }
        return lines.joined(separator: "\n")
    }

    static let header =
        "spread        records  build/s  write/s  mod p50  mod p99  page ms  eq ms  range ms  compact ms (tomb)  B/rec  RSS MB"

    static func line(_ point: GrowthPoint) -> String {
        String(
            format: "%-12@ %8d %8.0f %8.0f %8.2f %8.2f %8.2f %6.2f %9.2f %11.1f (%4d) %6.0f %7.0f",
            point.spread.title as NSString, point.records, point.buildRate, point.writeRate, point.modifyP50, point.modifyP99,
            point.feedPage, point.queryEquals, point.queryRange, point.compaction, point.tombstones, point.bytesPerRecord,
            point.residentMB)
    }
}
