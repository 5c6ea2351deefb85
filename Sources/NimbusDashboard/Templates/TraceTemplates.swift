import Foundation

/// The traces page: a search box, the verdict, the hops, a record's latest traces.
enum TraceTemplates {
    static let all: [String: String] = ["traces": traces]

    static let traces = """
        {{<layout}}{{$body}}
        <h1>Traces</h1>
        <form method="get" action="/dashboard/traces" class="inline" id="trace-search" role="search">
          <label for="q">Trace ID or record name</label>
          <input id="q" name="q" value="{{q}}" size="40" required>
          <button type="submit">Show</button>
        </form>
        <p class="muted">A trace ID is 32 hex digits (the SDK's <code>RequestTrace.traceID</code>, a <code>traceparent</code>'s second part); a record name shows the latest change of that record. The same as <code>nimbus trace</code>. Servers write hops within a fraction of a second.</p>
        {{#queryError}}<p class="error" role="alert" id="query-error">{{queryError}}</p>{{/queryError}}
        {{#shown}}
        <p class="verdict {{verdictClass}}" role="status" id="verdict"><strong>Where it stopped: {{stop}}</strong> — {{verdict}}</p>
        {{#traceID}}<p>Trace <code id="trace-id">{{traceID}}</code>{{#recordName}} · the latest change of <strong>{{recordName}}</strong>{{/recordName}}</p>{{/traceID}}
        {{#noHops}}<p class="muted" id="no-hops">No hop of {{q}} is stored.</p>{{/noHops}}
        {{#hasHops}}<div class="table-wrap"><table id="hops">
        <thead><tr><th scope="col">Offset ms</th><th scope="col">Hop</th><th scope="col">Source</th><th scope="col">Duration ms</th><th scope="col">Status</th><th scope="col">Message</th><th scope="col">Attributes</th><th scope="col">Records</th></tr></thead>
        <tbody>
        {{#hops}}<tr class="{{#later}}later{{/later}}{{#failed}} failed{{/failed}}"><td class="num">{{offset}}</td><td><strong>{{name}}</strong>{{#later}}<div class="later-mark">later trace <a href="/dashboard/traces?{{laterQ}}">{{shortTrace}}</a></div>{{/later}}</td>
        <td>{{source}}</td><td class="num">{{duration}}</td><td>{{status}}{{#code}} <strong class="code">{{code}}</strong>{{/code}}</td><td>{{message}}</td>
        <td>{{#attributes}}<div><code>{{key}}</code>={{value}}</div>{{/attributes}}</td>
        <td>{{#records}}<div><a href="/dashboard/traces?{{q}}">{{name}}</a></div>{{/records}}{{#moreRecords}}<div class="muted">and {{moreRecords}} more</div>{{/moreRecords}}</td></tr>
        {{/hops}}
        </tbody></table></div>
        <p class="muted">Rows marked “later trace” are fetches and applies of this change's records by devices that fetched them in a trace of their own (not through this change's push).</p>{{/hasHops}}
        {{#hasRecent}}<h2>Latest traces that touched {{recordName}}</h2>
        <div class="table-wrap"><table id="recent-traces">
        <thead><tr><th scope="col">Started</th><th scope="col">Trace</th><th scope="col">First hop</th><th scope="col">Where it stopped</th></tr></thead>
        <tbody>{{#recent}}<tr{{#selected}} class="selected" aria-current="true"{{/selected}}><td>{{started}}</td><td><a href="/dashboard/traces?{{q}}"><code>{{traceID}}</code></a></td><td>{{firstHop}}</td><td>{{stop}}</td></tr>{{/recent}}</tbody>
        </table></div>{{/hasRecent}}
        {{#hasHops}}<h2>As <code>nimbus trace</code> prints it</h2>
        <pre id="trace-text">{{text}}</pre>{{/hasHops}}
        {{/shown}}
        {{/body}}{{/layout}}
        """
}
