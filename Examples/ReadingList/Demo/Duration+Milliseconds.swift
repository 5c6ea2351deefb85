extension Duration {
    /// Milliseconds, for printing (the demo's timings).
    var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}
