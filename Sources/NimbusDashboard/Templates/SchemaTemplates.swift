import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// The schema page.
enum SchemaTemplates {
    static let all: [String: String] = ["schema": schema]

    static let schema = """
        {{<layout}}{{$body}}
        <p><a href="/dashboard/container?{{cq}}">{{container}}</a></p>
        <h1>Schema</h1>
        {{#message}}<p class="notice" role="status" id="schema-message">{{message}}</p>{{/message}}
        {{#error}}<p class="error" role="alert" id="schema-error">{{error}}</p>{{/error}}
        <h2>Development → production</h2>
        {{#refusal}}<p class="error">Cannot deploy: {{refusal}}</p>{{/refusal}}
        <ul id="schema-diff">{{#changes}}<li class="{{#add}}diff-add{{/add}}{{^add}}diff-remove{{/add}}">{{sign}} {{what}}</li>{{/changes}}
        {{#grantsDiffer}}<li>permissions change</li>{{/grantsDiffer}}</ul>
        {{#deployable}}<form method="post" action="/dashboard/schema/deploy" data-confirm="Deploy the development schema to production?">
          <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="c" value="{{container}}">
          <button type="submit" id="deploy">Deploy to production</button>
        </form>{{/deployable}}
        {{^deployable}}{{^refusal}}<p class="muted">Production has the development schema.</p>{{/refusal}}{{/deployable}}
        {{#environments}}<h2>{{name}} (version {{version}})</h2>
        {{#empty}}<p class="muted">No record types yet.</p>{{/empty}}
        {{#types}}<h3>{{name}}</h3><p class="muted">Permissions: {{grants}}</p>
        <div class="table-wrap"><table><thead><tr><th scope="col">Field</th><th scope="col">Type</th><th scope="col">Indexes</th></tr></thead>
        <tbody>{{#fields}}<tr><td>{{name}}</td><td>{{type}}</td><td>{{indexes}}</td></tr>{{/fields}}</tbody></table></div>{{/types}}
        {{/environments}}
        <h2>Edit the development schema</h2>
        <form method="post" action="/dashboard/schema/development">
          <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="c" value="{{container}}">
          <input type="hidden" name="version" value="{{developmentVersion}}">
          <label for="schema-text">Schema (as <code>nimbus schema export</code> writes it)</label>
          <textarea id="schema-text" name="schema" class="code" spellcheck="false">{{developmentText}}</textarea>
          <p><button type="submit">Save the development schema</button></p>
        </form>
        {{/body}}{{/layout}}
        """
}
