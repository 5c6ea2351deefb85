import NimbusProtocol

/// How a batch of spans is laid out in rows by a store that keeps a request's spans together:
/// a span whose parent is in the same batch, from the same source, and that names no records
/// (the `commit` of a `records/modify`) rides in its parent's row as JSON instead of taking a
/// row (and index entries) of its own. Pure: the SQLite trace store writes what it returns.
package struct TraceSpanRows: Equatable {
    /// The span the row is keyed by.
    package var span: TraceSpan
    /// The spans kept in the row besides it, oldest first.
    package var children: [TraceSpan]

    package init(span: TraceSpan, children: [TraceSpan]) {
        self.span = span
        self.children = children
    }

    /// The rows of `spans`, in the order the rows' spans came. A span given twice is written
    /// twice (the later write wins); a child goes with the last version of its parent; a child
    /// whose parent is itself a child keeps a row of its own (one level).
    package static func rows(of spans: [TraceSpan]) -> [TraceSpanRows] {
        // Span IDs of a batch: a few dozen, so one dictionary of the last index of each.
        var last: [String: Int] = [:]
        last.reserveCapacity(spans.count)
        for (index, span) in spans.enumerated() { last[span.spanID] = index }
        func parentIndex(of index: Int) -> Int? {
            let span = spans[index]
            guard span.recordNames.isEmpty, let parentID = span.parentSpanID, let parent = last[parentID],
                parent != index, spans[parent].traceID == span.traceID, spans[parent].source == span.source
            else { return nil }
            return parent
        }
        var rows: [TraceSpanRows] = []
        rows.reserveCapacity(spans.count)
        var rowOf = [Int](repeating: -1, count: spans.count)
        var nested: [(child: Int, parent: Int)] = []
        for index in spans.indices {
            if let parent = parentIndex(of: index), parentIndex(of: parent) == nil {
                nested.append((index, parent))
            } else {
                rowOf[index] = rows.count
                rows.append(TraceSpanRows(span: spans[index], children: []))
            }
        }
        for (child, parent) in nested { rows[rowOf[parent]].children.append(spans[child]) }
        return rows
    }

    /// The `children` column: `nil` when the row holds one span.
    package var childrenJSON: String? {
        guard !children.isEmpty else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(256 * children.count)
        out.append(UInt8(ascii: "["))
        for (offset, child) in children.enumerated() {
            if offset > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: #"{"id":"#.utf8)
            JSON.writeString(child.spanID, into: &out)
            out.append(contentsOf: #","name":"#.utf8)
            JSON.writeString(child.name, into: &out)
            out.append(contentsOf: #","start":\#(child.startMicros),"end":\#(child.endMicros),"status":"#.utf8)
            JSON.writeString(child.status.rawValue, into: &out)
            if let code = child.errorCode {
                out.append(contentsOf: #","code":"#.utf8)
                JSON.writeString(code, into: &out)
            }
            if let message = child.message {
                out.append(contentsOf: #","message":"#.utf8)
                JSON.writeString(message, into: &out)
            }
            out.append(contentsOf: #","attributes":"#.utf8)
            TraceSpan.writeAttributes(child.attributes, into: &out)
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }

    /// The spans of a row's `children` column, children of `parent`. Malformed entries are skipped.
    package static func children(fromJSON text: String, of parent: TraceSpan) -> [TraceSpan] {
        guard let entries = (try? JSON.parse(Array(text.utf8)))?.array else { return [] }
        return entries.compactMap { entry in
            guard let object = entry.object, let id = object["id"]?.string, let name = object["name"]?.string,
                let start = object["start"]?.int64, let end = object["end"]?.int64
            else { return nil }
            return TraceSpan(
                traceID: parent.traceID, spanID: id, parentSpanID: parent.spanID, name: name, source: parent.source,
                startMicros: start, endMicros: end,
                status: object["status"]?.string.flatMap(TraceSpan.Status.init(rawValue:)) ?? .ok,
                errorCode: object["code"]?.string, message: object["message"]?.string,
                attributes: object["attributes"]?.object?.compactMapValues(\.string) ?? [:])
        }
    }
}
