import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// The query builder.
enum QueryTemplates {
    static let query = """
        {{<layout}}{{$body}}
        <p><a href="/dashboard/container?{{cq}}">{{container}}</a> · {{environment}} · public database</p>
        <h1>Query</h1>
        <form method="get" action="/dashboard/query" id="query-form">
          <input type="hidden" name="c" value="{{container}}"><input type="hidden" name="env" value="{{environment}}">
          <div class="grid">
          <label for="recordType">Record type<input id="recordType" name="recordType" value="{{recordType}}" list="record-types" required></label>
          <datalist id="record-types">{{#recordTypes}}<option value="{{.}}">{{/recordTypes}}</datalist>
          <label for="zone">Zone<input id="zone" name="zone" value="{{zone}}"></label>
          </div>
          {{#rows}}<fieldset><legend>Filter {{i}}</legend><div class="grid">
            <label for="ff{{i}}">Field<input id="ff{{i}}" name="ff{{i}}" value="{{field}}"></label>
            <label for="fc{{i}}">Comparator<select id="fc{{i}}" name="fc{{i}}">{{#comparators}}<option{{#selected}} selected{{/selected}}>{{name}}</option>{{/comparators}}</select></label>
            <label for="ft{{i}}">Type<select id="ft{{i}}" name="ft{{i}}">{{#types}}<option{{#selected}} selected{{/selected}}>{{name}}</option>{{/types}}</select></label>
            <label for="fv{{i}}">Value<input id="fv{{i}}" name="fv{{i}}" value="{{value}}"></label>
            <label for="fd{{i}}">Distance (NEAR, meters)<input id="fd{{i}}" name="fd{{i}}" value="{{distance}}" inputmode="decimal"></label>
          </div></fieldset>{{/rows}}
          <div class="grid">
          <label for="sort">Sort by field<input id="sort" name="sort" value="{{sort}}"></label>
          <label for="order">Order<select id="order" name="order"><option value="asc">ascending</option><option value="desc"{{#descending}} selected{{/descending}}>descending</option></select></label>
          <label for="desiredKeys">Desired keys (comma-separated; empty: all)<input id="desiredKeys" name="desiredKeys" value="{{desiredKeys}}"></label>
          <label for="limit">Results limit<input id="limit" name="limit" value="{{limit}}" inputmode="numeric"></label>
          </div>
          <p><button type="submit">Run query</button></p>
        </form>
        {{#curl}}<h2>As curl</h2><pre id="curl">{{curl}}</pre><button type="button" class="secondary" data-copy="curl">Copy</button>
        <p class="muted">Set <code>NIMBUS_API_TOKEN</code> to one of the container's API tokens.</p>{{/curl}}
        {{#queryError}}<p class="error" role="alert">{{queryError}}</p>{{/queryError}}
        {{#ran}}<h2>Results ({{count}}{{#more}}, more available{{/more}})</h2>
        <div class="table-wrap"><table id="results"><thead><tr><th scope="col">Record</th><th scope="col">Type</th><th scope="col">Fields</th></tr></thead>
        <tbody>{{#results}}<tr><td><a href="/dashboard/record?{{q}}">{{name}}</a></td><td>{{type}}</td><td>{{#fields}}<div>{{.}}</div>{{/fields}}</td></tr>{{/results}}</tbody></table></div>{{/ran}}
        {{/body}}{{/layout}}
        """
}
