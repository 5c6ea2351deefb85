import Nimbus
import NimbusProtocol

/// The outcome of merging one field both sides changed.
public struct FieldResolution: Sendable, Hashable, Codable {
    public enum Winner: String, Sendable, Hashable, Codable { case server, client, merged }
    public var field: String
    public var winner: Winner
    /// What the losing side had (nil when the field was absent there), as JSON text.
    public var lostValue: String?
    public var policy: String
}

/// A three-way merge of record fields: ancestor (the last server copy the device saw),
/// local (the device's pending version) and server (the server's current version).
///
/// Fields only one side changed take that side's value. Fields both sides changed to
/// different values are resolved by the field's ``FieldMergePolicy``.
public enum ThreeWayMerge {
    public static func merge(
        ancestor: [String: FieldValue], local: [String: FieldValue], server: [String: FieldValue], rules: MergeRules
    ) -> (fields: [String: FieldValue], resolutions: [FieldResolution]) {
        var result = server
        var resolutions: [FieldResolution] = []
        let keys = Set(ancestor.keys).union(local.keys).union(server.keys)
        for key in keys.sorted() {
            let base = ancestor[key], mine = local[key], theirs = server[key]
            // Assets compare by the bytes they stand for, not by their download URLs (signed
            // anew by every read): a copy fetched again is no change.
            let localChanged = !same(mine, base)
            let serverChanged = !same(theirs, base)
            if !localChanged { continue }  // server value (or its absence) stands
            let policy = rules.policy(for: key)
            // Equal values are no conflict, except for a counter: both sides counting 1 → 2
            // made two increments.
            if !serverChanged || (same(mine, theirs) && policy != .counter) {
                result[key] = mine
                continue
            }
            let (value, winner) = resolve(key, base: base, mine: mine, theirs: theirs, local: local, server: server, policy: policy)
            result[key] = value
            let lost: FieldValue? = winner == .server ? mine : (winner == .client ? theirs : nil)
            resolutions.append(
                FieldResolution(
                    field: key, winner: winner, lostValue: lost.map { $0.wireJSON().serialized() },
                    policy: "\(policy)"))
        }
        return (result, resolutions)
    }

    /// Whether two values (either absent) hold the same data.
    static func same(_ a: FieldValue?, _ b: FieldValue?) -> Bool {
        guard let a else { return b == nil }
        return a.sameData(as: b)
    }

    static func resolve(
        _ key: String, base: FieldValue?, mine: FieldValue?, theirs: FieldValue?, local: [String: FieldValue],
        server: [String: FieldValue], policy: FieldMergePolicy
    ) -> (FieldValue?, FieldResolution.Winner) {
        switch policy {
        case .serverWins:
            return (theirs, .server)
        case .clientWins:
            return (mine, .client)
        case .latestEdit(let field):
            let never = (milliseconds: Int64.min, fraction: Int64.min)
            let localTime = local[field].flatMap(time) ?? never
            let serverTime = server[field].flatMap(time) ?? never
            return localTime > serverTime ? (mine, .client) : (theirs, .server)
        case .union:
            guard case .list(let type, let serverList)? = theirs, case .list(_, let localList)? = mine else {
                return (mine, .client)
            }
            let baseList = base?.listValue ?? []
            let removedLocally = baseList.filter { !localList.contains($0) }
            var merged = serverList.filter { !removedLocally.contains($0) }
            for element in localList where !merged.contains(element) && !baseList.contains(element) {
                merged.append(element)
            }
            return (.list(elementType: type, merged), .merged)
        case .counter:
            switch (base, mine, theirs) {
            case (let b, .int64(let l)?, .int64(let s)?):
                let a = b?.int64Value ?? 0
                return (.int64(s &+ (l &- a)), .merged)
            case (let b, let l?, let s?):
                guard let lv = l.doubleValue, let sv = s.doubleValue else { return (mine, .client) }
                return (.double(sv + (lv - (b?.doubleValue ?? 0))), .merged)
            default:
                return (mine, .client)
            }
        }
    }

    /// The time an edit-time field holds, to the fraction of a millisecond a TIMESTAMP keeps
    /// (INT64 and DOUBLE values count whole milliseconds).
    static func time(_ value: FieldValue) -> (milliseconds: Int64, fraction: Int64)? {
        switch value {
        case .timestamp(let milliseconds, let fraction): return (milliseconds, fraction)
        case .int64(let milliseconds): return (milliseconds, 0)
        case .double(let milliseconds):
            guard let whole = Int64(exactly: milliseconds.rounded(.towardZero)) else { return nil }
            return (whole, 0)
        default: return nil
        }
    }
}
