import Foundation
import Nimbus

/// The `sync.apply` hop of a traced fetch: what the engine did with each fetched change —
/// applied it, merged it with a pending local edit, let the server's value win, kept the local
/// one, or already had it (its own save coming back).
enum ApplyTraceReport {
    static func make(
        _ page: RecordZoneChanges, zone: String, saved: [LocalRecord], deleted: [String], conflicts: [ConflictRecord],
        trace: RequestTrace, started: Date, ended: Date
    ) -> TraceSpanReport {
        let visible = Set(saved.map(\.recordName)).union(deleted)
        var outcomes: [String: Int] = [:]
        var notes: [String] = []
        let resolved = Dictionary(conflicts.map { ($0.recordName, $0) }, uniquingKeysWith: { first, _ in first })
        let names = page.modifications.map(\.id.recordName) + page.deletions.map(\.recordID.recordName)
        for name in names {
            let outcome: String
            if let conflict = resolved[name] {
                outcome = Self.outcome(of: conflict)
                notes.append("\(name): \(outcome)")
            } else if visible.contains(name) {
                outcome = deleted.contains(name) ? "deleted" : "applied"
            } else {
                outcome = "already up to date"
            }
            outcomes[outcome, default: 0] += 1
        }
        var attributes = ["zone": zone]
        for (outcome, count) in outcomes { attributes["outcome." + outcome.replacingOccurrences(of: " ", with: "_")] = String(count) }
        let summary = outcomes.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        let message = ([summary] + notes.prefix(5)).joined(separator: "; ")
        return TraceSpanReport(
            trace: trace.child(), parentSpanID: trace.spanID, name: "sync.apply", start: started, end: ended,
            message: String(message.prefix(900)), attributes: attributes, recordNames: Array(names.prefix(400)))
    }

    /// How a conflict was decided, from its fields' resolutions.
    static func outcome(of conflict: ConflictRecord) -> String {
        let winners = Set(conflict.resolutions.map(\.winner))
        if winners == [.server] { return "merge chose the server's value" }
        if winners == [.client] { return "merge kept the local value" }
        return "merged field by field"
    }
}
