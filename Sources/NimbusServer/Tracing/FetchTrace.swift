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
        var all = items.compactMap { $0["recordName"]?.string }
        if let earlier = span.attributes["nimbus.records"]?.toSpanAttribute(), case .stringArray(let names) = earlier {
            all = names + all
        }
        span.attributes["nimbus.records"] = Array(all.prefix(400))
        span.attributes["zone"] = zone
        span.attributes["delivered"] = Int64(all.count)
    }
}
