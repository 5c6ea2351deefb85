import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// The containers list and a container's page.
enum ContainerTemplates {
    static let all: [String: String] = ["containers": containers, "container": container, "messages": messages]

    /// The notice and the one-time secrets of a page after a change.
    static let messages = """
        {{#message}}<p class="notice" role="status">{{message}}</p>{{/message}}
        {{#secret}}<div class="secret"><p>API token (shown in full here; keep it for your app):</p><pre id="secret">{{secret}}</pre>
        <button type="button" class="secondary" data-copy="secret">Copy</button></div>{{/secret}}
        {{#privateKey}}<div class="secret"><p>The private key, shown once: save it now (e.g. as <code>key.pem</code>); the server keeps only the public key.</p>
        <pre id="private-key">{{privateKey}}</pre><button type="button" class="secondary" data-copy="private-key">Copy</button></div>{{/privateKey}}
        """

    static let containers = """
        {{<layout}}{{$body}}
        <h1>Containers</h1>
        {{>messages}}
        {{#none}}<p class="muted">No containers yet. Create the first one below.</p>{{/none}}
        <ul class="containers">
        {{#containers}}<li><a href="/dashboard/container?{{q}}">{{id}}</a></li>{{/containers}}
        </ul>
        <h2>Create a container</h2>
        <form method="post" action="/dashboard/containers" class="inline">
          <input type="hidden" name="csrf" value="{{csrf}}">
          <label for="identifier">Identifier</label>
          <input id="identifier" name="identifier" placeholder="iCloud.com.example.app" required>
          <button type="submit">Create</button>
        </form>
        {{/body}}{{/layout}}
        """

    static let container = """
        {{<layout}}{{$body}}
        <h1>{{container}}</h1>
        {{>messages}}
        <nav class="tabs" aria-label="Container">
          {{#environments}}<a href="/dashboard/zones?{{q}}">Data ({{name}})</a> <a href="/dashboard/query?{{q}}">Query ({{name}})</a>{{/environments}}
          <a href="/dashboard/schema?{{q}}">Schema</a> <a href="/dashboard/users?{{q}}">Users</a>
        </nav>
        <h2>API tokens</h2>
        <div class="table-wrap"><table>
        <thead><tr><th scope="col">Token</th><th scope="col">Created</th><th scope="col">State</th><th scope="col"></th></tr></thead>
        <tbody>
        {{#tokens}}<tr><td><code>{{token}}</code></td><td>{{created}}</td><td>{{#revoked}}revoked{{/revoked}}{{^revoked}}active{{/revoked}}</td>
        <td>{{^revoked}}<form method="post" action="/dashboard/container/token/revoke" class="inline" data-confirm="Revoke this token? Apps using it stop working at once.">
        <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="c" value="{{container}}"><input type="hidden" name="token" value="{{token}}">
        <button type="submit" class="danger">Revoke</button></form>{{/revoked}}</td></tr>{{/tokens}}
        </tbody></table></div>
        <form method="post" action="/dashboard/container/token" class="inline">
          <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="c" value="{{container}}">
          <button type="submit">Create an API token</button>
        </form>
        <h2>Server-to-server keys</h2>
        <div class="table-wrap"><table>
        <thead><tr><th scope="col">Key ID</th><th scope="col">Created</th><th scope="col">State</th><th scope="col"></th></tr></thead>
        <tbody>
        {{#keys}}<tr><td><code>{{keyID}}</code></td><td>{{created}}</td><td>{{#revoked}}revoked{{/revoked}}{{^revoked}}active{{/revoked}}</td>
        <td>{{^revoked}}<form method="post" action="/dashboard/container/key/revoke" class="inline" data-confirm="Revoke this key?">
        <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="c" value="{{container}}"><input type="hidden" name="key" value="{{keyID}}">
        <button type="submit" class="danger">Revoke</button></form>{{/revoked}}</td></tr>{{/keys}}
        </tbody></table></div>
        <form method="post" action="/dashboard/container/key" class="inline">
          <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="c" value="{{container}}">
          <button type="submit">Create a key pair</button>
        </form>
        <h2>Sign-in settings</h2>
        <dl>
          <dt>Built-in accounts (email and password)</dt><dd>{{#passwords}}allowed{{/passwords}}{{^passwords}}not allowed{{/passwords}}</dd>
          <dt>Allowed redirect origins</dt><dd>{{redirectOrigins}}{{^redirectOrigins}}none{{/redirectOrigins}}</dd>
          <dt>Deleting an account deletes its public records</dt><dd>{{#deletePublicRecords}}yes{{/deletePublicRecords}}{{^deletePublicRecords}}no{{/deletePublicRecords}}</dd>
          <dt>Identity providers</dt><dd>{{#issuers}}<div><code>{{issuer}}</code> (audiences {{audiences}})</div>{{/issuers}}{{^issuers}}none{{/issuers}}</dd>
        </dl>
        <p class="muted">Change them with <code>nimbus container signin</code> and <code>nimbus issuer</code>.</p>
        <h2>Operators and private data</h2>
        <form method="post" action="/dashboard/container/private-access" class="inline">
          <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="c" value="{{container}}">
          <input type="checkbox" id="allowed" name="allowed" {{#privateAccess}}checked{{/privateAccess}}>
          <label for="allowed">Operators may read users' private databases (every view is written to the audit log)</label>
          <button type="submit">Save</button>
        </form>
        {{/body}}{{/layout}}
        """
}
