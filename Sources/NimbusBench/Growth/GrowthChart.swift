import Foundation

/// The growth bench's curves as a PNG: a panel per ``GrowthMetric`` (cost relative to the
/// first size, on a logarithmic record axis), a line per spread, and the 1.5× bound dashed.
struct GrowthChart {
    var points: [GrowthPoint]
    var title: String

    private static let palette: [(UInt8, UInt8, UInt8)] = [
        (255, 255, 255), (40, 40, 40), (200, 200, 200), (210, 40, 40), (31, 119, 180), (44, 160, 44), (255, 127, 14),
    ]
    private enum Ink {
        static let paper: UInt8 = 0, text: UInt8 = 1, grid: UInt8 = 2, bound: UInt8 = 3
        static func spread(_ spread: GrowthSpread) -> UInt8 {
            switch spread {
            case .oneZone: 4
            case .hundredZones: 5
            case .users: 6
            }
        }
    }
    private static let columns = 3, panelWidth = 400, panelHeight = 280, top = 50, legendHeight = 40
    private static let maxRatio = 3.0

    func png() -> [UInt8] {
        let metrics = GrowthMetric.all
        let rows = (metrics.count + Self.columns - 1) / Self.columns
        var canvas = Canvas(width: Self.columns * Self.panelWidth, height: Self.top + rows * Self.panelHeight + Self.legendHeight)
        canvas.text(title, x: 16, y: 14, Ink.text, scale: 2)
        for (index, metric) in metrics.enumerated() {
            draw(metric, on: &canvas, x: (index % Self.columns) * Self.panelWidth, y: Self.top + (index / Self.columns) * Self.panelHeight)
        }
        var x = 16
        let legendY = canvas.height - Self.legendHeight + 14
        for spread in GrowthSpread.allCases where points.contains(where: { $0.spread == spread }) {
            canvas.fill(x: x, y: legendY + 4, width: 24, height: 4, Ink.spread(spread))
            canvas.text(spread.title, x: x + 32, y: legendY, Ink.text, scale: 2)
            x += 48 + Canvas.textWidth(spread.title, scale: 2)
        }
        canvas.line(from: (x, legendY + 6), to: (x + 24, legendY + 6), Ink.bound, thickness: 2, dash: 4)
        canvas.text("1.5× bound", x: x + 32, y: legendY, Ink.text, scale: 2)
        return PNGEncoder.encode(width: canvas.width, height: canvas.height, pixels: canvas.pixels, palette: Self.palette)
    }

    private func draw(_ metric: GrowthMetric, on canvas: inout Canvas, x: Int, y: Int) {
        let left = x + 44, right = x + Self.panelWidth - 20, plotTop = y + 30, bottom = y + Self.panelHeight - 40
        canvas.text(metric.title, x: left, y: y + 8, Ink.text, scale: 2)
        let sizes = Array(Set(points.map(\.records))).sorted()
        guard let smallest = sizes.first, let largest = sizes.last, largest > smallest else { return }
        let (low, high) = (log10(Double(smallest)), log10(Double(largest)))
        func px(_ records: Int) -> Int { left + Int((log10(Double(records)) - low) / (high - low) * Double(right - left)) }
        func py(_ ratio: Double) -> Int { bottom - Int(min(ratio, Self.maxRatio) / Self.maxRatio * Double(bottom - plotTop)) }
        for tick in stride(from: 0.0, through: Self.maxRatio, by: 0.5) {
            canvas.line(from: (left, py(tick)), to: (right, py(tick)), Ink.grid)
            if tick.truncatingRemainder(dividingBy: 1) == 0 { canvas.text("\(Int(tick))×", x: x + 14, y: py(tick) - 3, Ink.text) }
        }
        var decade = pow(10, ceil(low))
        while log10(decade) <= high + 1e-9 {
            let column = px(Int(decade))
            canvas.line(from: (column, plotTop), to: (column, bottom), Ink.grid)
            let label = GrowthBenchCommand.label(Int(decade))
            canvas.text(label, x: column - Canvas.textWidth(label) / 2, y: bottom + 8, Ink.text)
            decade *= 10
        }
        canvas.text("records", x: right - Canvas.textWidth("records"), y: bottom + 20, Ink.text)
        canvas.line(from: (left, py(GrowthTable.bound)), to: (right, py(GrowthTable.bound)), Ink.bound, thickness: 2, dash: 6)
        canvas.line(from: (left, plotTop), to: (left, bottom), Ink.text)
        canvas.line(from: (left, bottom), to: (right, bottom), Ink.text)
        for spread in GrowthSpread.allCases {
            let curve = points.filter { $0.spread == spread }.sorted { $0.records < $1.records }
            guard let first = curve.first else { continue }
            var previous: (Int, Int)?
            for point in curve {
                let ratio = metric.costRatio(point, to: first)
                guard !ratio.isNaN else { continue }
                let here = (px(point.records), py(ratio))
                if let previous { canvas.line(from: previous, to: here, Ink.spread(spread), thickness: 2) }
                canvas.fill(x: here.0 - 3, y: here.1 - 3, width: 7, height: 7, Ink.spread(spread))
                previous = here
            }
        }
    }
}
