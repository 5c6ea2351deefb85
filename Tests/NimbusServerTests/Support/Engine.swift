import Testing

/// The storage engines the server's behaviour suite runs on: every `@Test(arguments:
/// Engine.available)` runs once per engine, so both engines meet one suite, not copies.
enum Engine: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite

    /// The engines this run can reach.
    static var available: [Engine] { [.sqlite] }

    var testDescription: String { rawValue }
}
