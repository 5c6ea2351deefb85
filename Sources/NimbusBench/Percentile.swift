/// The nearest-rank `p`th percentile (0…100) of values sorted in ascending order.
func percentile(sorted: [Double], _ p: Double) -> Double {
    sorted[min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1))]
}
