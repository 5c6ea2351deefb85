import NimbusProtocol
import Tracing

/// What a traced fetch (`records/changes`, `changes/zone`) delivered: the names of the records
/// (and deletions) in its pages, so a change's trace shows which device fetched it.
enum FetchTrace {
    static func delivered(_ records: JSON, zone: String, span: NimbusSpan) {
        let items: [JSON]
        switch records {
        case .rawUTF8(let bytes): items = (try? JSON.parse(bytes))?.array ?? []
        default: items = records.array ?? []
        }
        let names = items.compactMap { $0["recordName"]?.string }
        span.update { facts in
            let all = facts.recordNames + names
            facts.recordNames = Array(all.prefix(400))
            facts["zone"] = zone
            facts["delivered"] = String(all.count)
        }
    }
}
